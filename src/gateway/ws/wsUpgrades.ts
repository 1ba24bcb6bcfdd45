import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import { WebSocketServer } from "ws";
import type { Config } from "../../config/schema.js";
import type { Logger } from "../../log/logger.js";
import type { GatewayMetrics } from "../../metrics/gatewayMetrics.js";
import type { RouteCache } from "../http/routeCache.js";
import type { RouteMatch } from "../http/routes.js";
import { clientAddress } from "../limits/clientAddress.js";
import type { ConnectionCap } from "../limits/connectionCap.js";
import type { NetworkRuntime } from "../networkRuntime.js";
import type { Refusal } from "../pipeline/answer.js";
import type { ParsedBody } from "../rpc/parseRequest.js";
import { WsSession } from "./wsSession.js";
import type { WsNetwork } from "./wsSession.js";

export interface WsUpgradeOptions {
  settings: Config["gateway"];
  runtimes: ReadonlyMap<string, NetworkRuntime>;
  routes: RouteCache;
  /** Open WebSocket connections (and handshakes under way) per client address. */
  connectionCap: ConnectionCap;
  /** The per-address rate limit of a network: the refusal when a frame's calls do not fit. */
  admit: (runtime: NetworkRuntime, parsed: ParsedBody, address: string) => Refusal | Promise<Refusal>;
  metrics: GatewayMetrics;
  logger: Logger;
}

/** Socket errors end in `close`, where what the connection held is released. */
const ignore = () => {};

const NOT_FOUND = "HTTP/1.1 404 Not Found\r\nconnection: close\r\ncontent-length: 0\r\n\r\n";
const TOO_MANY = "HTTP/1.1 429 Too Many Requests\r\nconnection: close\r\ncontent-length: 0\r\n\r\n";

/**
 * The WebSocket side of the gateway's port: upgrades on a network's `/ws`, each connection counted for its client
 * address from the handshake on (so a burst of handshakes cannot get past the cap), served by a WsSession.
 */
export class WsUpgrades {
  private readonly wss: WebSocketServer;
  private readonly sessions = new Set<WsSession>();
  /** What each network gives its sessions, made once per network. */
  private readonly networks = new Map<string, WsNetwork>();
  /** One timer pings every session (a timer per connection would be memory per subscriber). */
  private readonly pings: NodeJS.Timeout;
  private stopping = false;

  constructor(private readonly options: WsUpgradeOptions) {
    this.wss = new WebSocketServer({ noServer: true, maxPayload: options.settings.maxBodyBytes });
    // A client that has not answered a ping by the next one is cut off: between one and two intervals after it went
    // quiet.
    this.pings = setInterval(() => {
      for (const session of this.sessions) session.ping();
    }, options.settings.pingInterval);
    this.pings.unref();
  }

  /** node:http's `upgrade` event. */
  handle(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const route = this.options.routes.of(req.headers.host, req.url ?? "/");
    if (!route || route.transport !== "ws" || this.stopping) {
      socket.end(NOT_FOUND);
      return;
    }
    socket.on("error", ignore);
    const { connectionCap } = this.options;
    const address = clientAddress(req, this.options.settings.trustForwardedFor);
    const granted = connectionCap.acquire(address);
    if (granted === true) return this.upgrade(req, socket, head, route, address);
    if (granted === false) return this.refuse(socket, route.network);
    void granted.then(
      (ok) => {
        if (!ok) return this.refuse(socket, route.network);
        // The client may have gone while the count was asked for.
        if (socket.destroyed || this.stopping) {
          connectionCap.release(address);
          socket.destroy();
          return;
        }
        this.upgrade(req, socket, head, route, address);
      },
      () => this.refuse(socket, route.network),
    );
  }

  /** Refuses further upgrades and closes every connection with 1001 (going away). */
  closeSessions(): void {
    this.stopping = true;
    for (const session of this.sessions) session.close(1001, "server shutting down");
  }

  close(): void {
    clearInterval(this.pings);
    this.wss.close();
  }

  private refuse(socket: Duplex, network: string): void {
    this.options.metrics.wsDisconnects.inc({ network, reason: "too-many-connections" });
    socket.end(TOO_MANY);
  }

  private networkOf(name: string): WsNetwork {
    let network = this.networks.get(name);
    if (!network) {
      const { settings, metrics, logger } = this.options;
      const runtime = this.options.runtimes.get(name)!;
      network = {
        handler: runtime.handler,
        streams: runtime.streams,
        limits: {
          maxBatchLength: settings.maxBatchLength,
          maxSubscriptions: settings.maxSubscriptionsPerConnection,
          maxBufferedBytes: settings.maxBufferedBytes,
          maxInFlight: settings.maxInFlightPerConnection,
        },
        admit: (parsed, address) => this.options.admit(runtime, parsed, address),
        metrics,
        logger: logger.child({ component: "gateway", network: name }),
        sessions: this.sessions,
      };
      this.networks.set(name, network);
    }
    return network;
  }

  /** Serves a WebSocket whose connection is counted for its address. */
  private upgrade(
    req: IncomingMessage,
    socket: Duplex,
    head: Buffer,
    route: NonNullable<RouteMatch>,
    address: string,
  ): void {
    const { connectionCap } = this.options;
    // `on`, not `once` (a socket closes once): no wrapper kept per connection.
    socket.on("close", () => connectionCap.release(address));
    this.wss.handleUpgrade(req, socket, head, (ws) => {
      // The session is in `sessions` until it closes.
      new WsSession(ws, socket, this.networkOf(route.network), address);
    });
  }
}
