import { Agent, createServer } from "node:http";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import httpProxy from "http-proxy";
import type { Logger } from "../../log/logger.js";

/** What the front answers when no replica can take a call (all restarting) or the one chosen failed under it. */
const UNAVAILABLE = (message: string) =>
  JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32603, message } });

export interface ReplicaFrontOptions {
  host: string;
  port: number;
  /** The replicas serving now; read at every request. */
  targets: () => ReplicaTarget[];
  logger: Logger;
}

export interface ReplicaTarget {
  name: string;
  url: string;
}

/** The answer header that names the replica that answered (HTTP, and a WebSocket's 101). */
export const REPLICA_HEADER = "x-lightfleet-replica";

export interface ReplicaFront {
  /** http://host:port */
  url: string;
  close(): Promise<void>;
}

/** The next target round robin from `cursor`, or undefined when there is none. */
export function pickRoundRobin<T>(targets: ReadonlyArray<T>, cursor: number): T | undefined {
  return targets.length === 0 ? undefined : targets[cursor % targets.length];
}

/**
 * The one address of `up`'s gateway replicas, as a Service or an ingress would be: each request and each WebSocket
 * upgrade goes to the next serving replica (round robin), with the client's address in X-Forwarded-For (the replicas
 * trust its last entry). A replica that exited is out of the turn at once; calls in flight on it fail with -32603.
 * Each answer names its replica in `x-lightfleet-replica`, so a client (or a test) can tell them apart.
 */
export async function startReplicaFront(options: ReplicaFrontOptions): Promise<ReplicaFront> {
  const agent = new Agent({ keepAlive: true });
  const proxy = httpProxy.createProxyServer({ xfwd: true, agent, ws: true });
  let cursor = 0;
  const next = () => pickRoundRobin(options.targets(), cursor++);
  const log = options.logger.child({ component: "gateway-front" });
  const chosen = new WeakMap<IncomingMessage, string>();
  proxy.on("proxyRes", (proxyRes, req) => {
    const name = chosen.get(req);
    if (name) proxyRes.headers[REPLICA_HEADER] = name;
  });
  // The 101 of an upgrade is written from the replica's answer: name it there before it is.
  proxy.on("proxyReqWs", (proxyReq, req) => {
    const name = chosen.get(req);
    if (name)
      proxyReq.prependListener("upgrade", (proxyRes: IncomingMessage) => {
        proxyRes.headers[REPLICA_HEADER] = name;
      });
  });
  const fail = (res: ServerResponse, status: number, message: string) => {
    if (res.headersSent) {
      res.destroy();
      return;
    }
    res.writeHead(status, { "content-type": "application/json" }).end(UNAVAILABLE(message));
  };
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const target = next();
    if (!target) return fail(res, 503, "no gateway replica is serving; try again shortly");
    chosen.set(req, target.name);
    proxy.web(req, res, { target: target.url }, (error) => {
      log.warn(
        { replica: target.name, err: error.message },
        "gateway replica did not answer through the front",
      );
      fail(res, 502, "the gateway replica failed under this call; try again");
    });
  });
  // Upgraded sockets leave the server's books: kept here so that closing the front closes them.
  const upgraded = new Set<Socket>();
  server.on("upgrade", (req: IncomingMessage, socket: Socket, head: Buffer) => {
    upgraded.add(socket);
    socket.once("close", () => upgraded.delete(socket));
    const target = next();
    if (!target) {
      socket.end("HTTP/1.1 503 Service Unavailable\r\nconnection: close\r\ncontent-length: 0\r\n\r\n");
      return;
    }
    socket.on("error", () => socket.destroy());
    chosen.set(req, target.name);
    proxy.ws(req, socket, head, { target: target.url }, (error) => {
      log.warn(
        { replica: target.name, err: error.message },
        "gateway replica WebSocket failed through the front",
      );
      socket.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const { host } = options;
  return {
    // Spelt as the gateway spells its own address.
    url: `http://${host.includes(":") ? `[${host}]` : host}:${port}`,
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      // WebSockets and kept-alive connections through the front end with it.
      server.closeAllConnections();
      for (const socket of upgraded) socket.destroy();
      proxy.close();
      agent.destroy();
      await closed;
    },
  };
}
