import type { Duplex } from "node:stream";
import { createServer } from "node:http";
import { gunzip, gzip } from "node:zlib";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Registry } from "prom-client";
import { WebSocketServer } from "ws";
import type { Config } from "../config/schema.js";
import type { BlockRef } from "../chain/blockRef.js";
import type { Logger } from "../log/logger.js";
import { createGatewayMetrics } from "../metrics/gatewayMetrics.js";
import type { JsonRpcRequest, JsonRpcResponse } from "../rpc/jsonRpc.js";
import { RPC_ERROR } from "../rpc/jsonRpc.js";
import { matchRoute } from "./http/routes.js";
import { clientAddress } from "./limits/clientAddress.js";
import { ConnectionCounts } from "./limits/connectionCap.js";
import type { ConnectionCap } from "./limits/connectionCap.js";
import { configuredRateLimiter } from "./limits/ipRateLimiter.js";
import type { RateLimiter, RateVerdict } from "./limits/ipRateLimiter.js";
import { callCount, callsOf, rateLimitRefusal } from "./limits/rateLimitRefusal.js";
import type { NetworkRoute, RouteMatch } from "./http/routes.js";
import { errorResponse, parseBody } from "./rpc/parseRequest.js";
import type { ParsedBody } from "./rpc/parseRequest.js";
import { serializeBody } from "./rpc/serialize.js";
import { answer } from "./pipeline/answer.js";
import type { Answer, AnswerSteps, Refusal } from "./pipeline/answer.js";
import { openNetworkRuntime } from "./networkRuntime.js";
import type { FilterWorkers, NetworkRuntime } from "./networkRuntime.js";
import { filterNotFound } from "./filters/filterStore.js";
import { openRedisState } from "./sharedState/redisState.js";
import type { UpstreamSource } from "./upstreams/upstreamSource.js";
import { closeUpstreamPools } from "./upstreams/forward.js";
import { WsSession } from "./ws/wsSession.js";

export interface GatewayOptions {
  config: Config;
  source: UpstreamSource;
  logger: Logger;
  registry: Registry;
  host?: string;
  port?: number;
  /** The per-address limit, when it is kept with others (gateway workers); by default built from the config. */
  rateLimiter?: RateLimiter;
  /** The per-address WebSocket connection cap, when counted with others (gateway workers); by default in-process. */
  connectionCap?: ConnectionCap;
  /** Filters kept by several workers (see FilterStore); by default all of them are here. */
  filterWorkers?: FilterWorkers;
}

export type { FilterWorkers } from "./networkRuntime.js";

export interface Gateway {
  /** http://host:port */
  url: string;
  /** Calls sent to a node so far per network, batch items counted (the autoscaler's rate). */
  requestTotals(): ReadonlyMap<string, number>;
  /** Served head per network (tests, status). */
  servedHead(network: string): number | undefined;
  /** The finalized and safe blocks the gateway resolves those tags to, per network, once agreed. */
  blockTags(network: string): { safe?: BlockRef; finalized?: BlockRef };
  /**
   * Starts a shutdown's first phase: everything is still served, but HTTP answers carry `connection: close`, so
   * kept-alive clients reconnect (through a Service or ingress that no longer routes here).
   */
  drain(): void;
  /** Stops accepting, closes WebSockets with 1001, lets in-flight requests finish. */
  stop(): Promise<void>;
  /** Answers a filter call another worker received for one of this worker's filters. */
  answerFilterCall(network: string, request: JsonRpcRequest, client: string): Promise<JsonRpcResponse>;
}

/** The content types geth takes for JSON-RPC (with any parameters, such as a charset). */
const JSON_TYPE = /^application\/(?:json|jsonrequest|json-rpc)\s*(?:;|$)/i;
/** Answers smaller than this go out uncompressed even to clients that take gzip: compressing them gains nothing. */
const GZIP_MIN_BYTES = 1024;
const TAKES_GZIP = /\bgzip\b(?!\s*;\s*q=0(?:\.0*)?\s*(?:,|$))/i;

/**
 * The public JSON-RPC gateway: HTTP POST and WebSocket on one port, per-network routes, healthy nodes only. Built on
 * node:http directly: the hot path is one body read, one parse and one upstream call, with nothing in between.
 */
export async function startGateway(options: GatewayOptions): Promise<Gateway> {
  const { config, logger } = options;
  const settings = config.gateway;
  const metrics = createGatewayMetrics(options.registry);
  const totals = new Map<string, number>();
  const runtimes = new Map<string, NetworkRuntime>();
  const routes: NetworkRoute[] = [];
  const workers = options.filterWorkers;
  // Filters, limits, caps and the head's high-water mark in Redis, shared with every replica (and worker).
  const redis =
    settings.sharedState.backend === "redis"
      ? openRedisState(settings, settings.sharedState, options.registry, logger)
      : undefined;
  const defaultNetwork =
    config.networks.find((n) => n.gateway.default)?.name ??
    (config.networks.length === 1 ? config.networks[0]!.name : undefined);

  for (const network of config.networks) {
    runtimes.set(
      network.name,
      openNetworkRuntime(network, {
        config,
        source: options.source,
        logger,
        metrics,
        redis,
        ...(workers ? { filterWorkers: workers } : {}),
        count: () => totals.set(network.name, (totals.get(network.name) ?? 0) + 1),
      }),
    );
    routes.push({
      network: network.name,
      hosts: network.gateway.hosts.map((h) => h.toLowerCase()),
      path: network.gateway.path ?? `/${network.name}`,
      default: network.name === defaultNetwork,
    });
  }

  // Filters unpolled for filterTimeout go, even when no call comes to notice it.
  const filterSweep = setInterval(
    () => {
      for (const runtime of runtimes.values()) runtime.filters.sweep();
    },
    Math.min(30_000, settings.filterTimeout),
  );
  filterSweep.unref();

  const limiter = options.rateLimiter ?? redis?.rateLimiter ?? configuredRateLimiter(settings.rateLimit);
  /** The refusal of a body the limit did not admit. */
  const refusal = (
    runtime: NetworkRuntime,
    parsed: ParsedBody,
    verdict: RateVerdict | undefined,
  ): Refusal => {
    if (!verdict || verdict.ok) return undefined;
    for (const call of callsOf(parsed)) runtime.handler.recordRateLimited(call.method);
    return { body: rateLimitRefusal(parsed, verdict.retryAfterMs), retryAfterMs: verdict.retryAfterMs };
  };
  /**
   * Takes the body's calls from the address's budget; the refusal when they do not fit (a promise when the budget is
   * kept in the shared store).
   */
  const admit = (
    runtime: NetworkRuntime,
    parsed: ParsedBody,
    address: string,
  ): Refusal | Promise<Refusal> => {
    const verdict = limiter?.take(address, callCount(parsed));
    return verdict instanceof Promise
      ? verdict.then((v) => refusal(runtime, parsed, v))
      : refusal(runtime, parsed, verdict);
  };

  let stopping = false;
  let draining = false;
  const sessions = new Set<WsSession>();
  /** Open WebSocket connections (and handshakes under way) per client address. */
  const connectionCap =
    options.connectionCap ??
    redis?.connectionCap ??
    new ConnectionCounts(settings.maxWsConnectionsPerAddress);
  const wss = new WebSocketServer({ noServer: true, maxPayload: settings.maxBodyBytes });
  const corsEnabled = settings.corsOrigins.length > 0;
  const anyOrigin = settings.corsOrigins.includes("*");
  /**
   * CORS headers for a browser's request (one with Origin; no other client reads them): the preflight's (OPTIONS)
   * answer gets them all, a call only Access-Control-Allow-Origin, the one header the browser's check of a response
   * reads. Every header set costs a validation per answer, more than answering eth_blockNumber itself.
   */
  const cors = (req: IncomingMessage, res: ServerResponse) => {
    const origin = req.headers.origin;
    if (origin === undefined) return;
    const allowed = anyOrigin ? "*" : settings.corsOrigins.includes(origin) ? origin : undefined;
    if (!allowed) return;
    res.setHeader("access-control-allow-origin", allowed);
    if (allowed !== "*") res.setHeader("vary", "origin");
    if (req.method !== "OPTIONS") return;
    res.setHeader("access-control-allow-methods", "POST, OPTIONS");
    res.setHeader("access-control-allow-headers", "content-type, authorization");
    res.setHeader("access-control-max-age", "86400");
  };
  const reply = (res: ServerResponse, status: number, text: string, extra?: Record<string, string>) => {
    res.writeHead(status, {
      "content-type": "application/json",
      "content-length": Buffer.byteLength(text),
      ...extra,
    });
    res.end(text);
  };
  const replyError = (
    res: ServerResponse,
    status: number,
    code: number,
    message: string,
    extra?: Record<string, string>,
  ) => reply(res, status, JSON.stringify(errorResponse(null, code, message)), extra);
  /**
   * Writes an answer: an empty 200 for notifications only (as geth answers them), Retry-After with a rate-limit
   * refusal, gzip-compressed when the client takes it and the answer is large enough to gain from it.
   */
  const send = (req: IncomingMessage, res: ServerResponse, answered: Answer) => {
    if (answered.body === undefined) {
      res.writeHead(200, { "content-type": "application/json", "content-length": 0 }).end();
      return;
    }
    const text = serializeBody(answered.body);
    const status = answered.retryAfterMs === undefined ? 200 : 429;
    const extra: Record<string, string> =
      answered.retryAfterMs === undefined
        ? {}
        : { "retry-after": String(Math.ceil(answered.retryAfterMs / 1000)) };
    const accepts = req.headers["accept-encoding"];
    if (text.length < GZIP_MIN_BYTES || accepts === undefined || !TAKES_GZIP.test(accepts)) {
      reply(res, status, text, extra);
      return;
    }
    gzip(text, (error, zipped) => {
      if (error) return reply(res, status, text, extra);
      res.writeHead(status, {
        "content-type": "application/json",
        "content-encoding": "gzip",
        vary: "accept-encoding",
        "content-length": zipped.length,
        ...extra,
      });
      res.end(zipped);
    });
  };
  const tooLarge = (res: ServerResponse) =>
    replyError(
      res,
      413,
      RPC_ERROR.INVALID_REQUEST,
      `request body larger than ${settings.maxBodyBytes} bytes`,
      {
        connection: "close",
      },
    );
  const failed = (res: ServerResponse, error: unknown) => {
    // Never an unhandled rejection (which would end the process) nor a stack trace to the client.
    logger.error({ err: error }, "gateway: unexpected failure answering a request");
    if (!res.headersSent) replyError(res, 500, RPC_ERROR.INTERNAL_ERROR, "internal error");
    else res.destroy();
  };
  /** Routes by host and path, cached: clients send the same few. */
  const routeCache = new Map<string, RouteMatch>();
  const routeOf = (host: string | undefined, path: string): RouteMatch => {
    const key = `${host ?? ""} ${path}`;
    let route = routeCache.get(key);
    if (route === undefined && !routeCache.has(key)) {
      route = matchRoute(routes, host, path);
      // Bounded: a client making up hosts or paths only empties the cache.
      if (routeCache.size >= 1_000) routeCache.clear();
      routeCache.set(key, route);
    }
    return route;
  };

  const server = createServer(
    {
      // A client trickling a request (slowloris) holds a connection only this long; checked at least every second.
      requestTimeout: settings.requestTimeout,
      headersTimeout: settings.requestTimeout,
      connectionsCheckingInterval: Math.min(1_000, settings.requestTimeout),
    },
    (req, res) => {
      if (draining) res.setHeader("connection", "close");
      if (corsEnabled) cors(req, res);
      const route = routeOf(req.headers.host, req.url ?? "/");
      if (!route || route.transport !== "http") {
        replyError(res, 404, RPC_ERROR.INVALID_REQUEST, "no network is served at this path");
        req.resume();
        return;
      }
      if (req.method === "OPTIONS") {
        res.writeHead(204).end();
        return;
      }
      if (req.method !== "POST") {
        replyError(res, 405, RPC_ERROR.INVALID_REQUEST, "JSON-RPC requests are POSTed", {
          allow: "POST, OPTIONS",
        });
        req.resume();
        return;
      }
      const type = req.headers["content-type"];
      if (type !== undefined && !JSON_TYPE.test(type)) {
        replyError(res, 415, RPC_ERROR.INVALID_REQUEST, "content-type must be application/json");
        req.resume();
        return;
      }
      const encoding = req.headers["content-encoding"]?.trim().toLowerCase();
      const gzipped = encoding === "gzip" || encoding === "x-gzip";
      if (encoding !== undefined && encoding !== "identity" && !gzipped) {
        replyError(res, 415, RPC_ERROR.INVALID_REQUEST, "content-encoding must be gzip or identity");
        req.resume();
        return;
      }
      const declared = Number(req.headers["content-length"] ?? 0);
      if (declared > settings.maxBodyBytes) {
        tooLarge(res);
        req.destroy();
        return;
      }
      const chunks: Buffer[] = [];
      let size = 0;
      req.on("data", (chunk: Buffer) => {
        size += chunk.length;
        if (size > settings.maxBodyBytes) {
          tooLarge(res);
          req.destroy();
          return;
        }
        chunks.push(chunk);
      });
      req.on("error", () => {});
      req.on("end", () => {
        if (size > settings.maxBodyBytes) return;
        // A body that came in one chunk is decoded without a copy.
        const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
        if (!gzipped) return answerText(req, res, route.network, body.toString("utf8"));
        // Inflated to at most maxBodyBytes, so a small compressed body cannot become a huge one.
        gunzip(body, { maxOutputLength: settings.maxBodyBytes }, (error, inflated) => {
          if (!error) return answerText(req, res, route.network, inflated.toString("utf8"));
          if ((error as NodeJS.ErrnoException).code === "ERR_BUFFER_TOO_LARGE") return tooLarge(res);
          replyError(res, 400, RPC_ERROR.PARSE_ERROR, "parse error: the body is not valid gzip");
        });
      });
    },
  );

  /** Each network's steps of answering a body, made once (see AnswerSteps). */
  const stepsOf = new Map<string, AnswerSteps>();
  for (const [network, runtime] of runtimes)
    stepsOf.set(network, {
      ...(limiter ? { admit: (parsed: ParsedBody, client: string) => admit(runtime, parsed, client) } : {}),
      call: (request, client) => runtime.handler.handle(request, client),
    });

  /** Answers a body and writes the answer: at once when no node was asked (eth_blockNumber, refusals). */
  function answerText(req: IncomingMessage, res: ServerResponse, network: string, text: string): void {
    let answered: Answer | Promise<Answer>;
    try {
      answered = answer(
        parseBody(text, settings.maxBatchLength),
        stepsOf.get(network)!,
        clientAddress(req, settings.trustForwardedFor),
      );
    } catch (error) {
      failed(res, error);
      return;
    }
    if (!(answered instanceof Promise)) send(req, res, answered);
    else
      answered.then(
        (a) => send(req, res, a),
        (error: unknown) => failed(res, error),
      );
  }

  const refuseConnection = (socket: Duplex, network: string) => {
    metrics.wsDisconnects.inc({ network, reason: "too-many-connections" });
    socket.end("HTTP/1.1 429 Too Many Requests\r\nconnection: close\r\ncontent-length: 0\r\n\r\n");
  };
  /** Serves a WebSocket whose connection is counted for its address. */
  const upgrade = (
    req: IncomingMessage,
    socket: Duplex,
    head: Buffer,
    route: NonNullable<RouteMatch>,
    address: string,
  ) => {
    socket.once("close", () => connectionCap.release(address));
    wss.handleUpgrade(req, socket, head, (ws) => {
      const runtime = runtimes.get(route.network)!;
      const handler = runtime.handler;
      const session = new WsSession(
        ws,
        socket,
        { network: handler.network, handle: (request) => handler.handle(request, address) },
        runtime.streams,
        {
          maxBatchLength: settings.maxBatchLength,
          maxSubscriptions: settings.maxSubscriptionsPerConnection,
          maxBufferedBytes: settings.maxBufferedBytes,
          pingIntervalMs: settings.pingInterval,
          maxInFlight: settings.maxInFlightPerConnection,
        },
        (parsed) => admit(runtime, parsed, address),
        metrics,
        logger.child({ component: "gateway", network: route.network }),
      );
      sessions.add(session);
      ws.on("close", () => sessions.delete(session));
    });
  };
  server.on("upgrade", (req, socket, head) => {
    const route = routeOf(req.headers.host, req.url ?? "/");
    if (!route || route.transport !== "ws" || stopping) {
      socket.end("HTTP/1.1 404 Not Found\r\nconnection: close\r\ncontent-length: 0\r\n\r\n");
      return;
    }
    socket.on("error", () => {});
    const address = clientAddress(req, settings.trustForwardedFor);
    // Counted from the upgrade on, so a burst of handshakes cannot get past the cap.
    const granted = connectionCap.acquire(address);
    if (granted === true) return upgrade(req, socket, head, route, address);
    if (granted === false) return refuseConnection(socket, route.network);
    void granted.then(
      (ok) => {
        if (!ok) return refuseConnection(socket, route.network);
        // The client may have gone while the count was asked for.
        if (socket.destroyed || stopping) {
          connectionCap.release(address);
          socket.destroy();
          return;
        }
        upgrade(req, socket, head, route, address);
      },
      () => refuseConnection(socket, route.network),
    );
  });
  server.on("clientError", (error: NodeJS.ErrnoException, socket) => {
    if (!socket.writable) return;
    const status = error.code === "ERR_HTTP_REQUEST_TIMEOUT" ? "408 Request Timeout" : "400 Bad Request";
    socket.end(`HTTP/1.1 ${status}\r\nconnection: close\r\ncontent-length: 0\r\n\r\n`);
  });

  const host = options.host ?? settings.host;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? settings.port, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const url = `http://${host.includes(":") ? `[${host}]` : host}:${port}`;

  return {
    url,
    requestTotals: () => totals,
    servedHead: (network) => runtimes.get(network)?.upstreams.servedHead(),
    blockTags: (network) => {
      const upstreams = runtimes.get(network)?.upstreams;
      const safe = upstreams?.safe();
      const finalized = upstreams?.finalized();
      return { ...(safe ? { safe } : {}), ...(finalized ? { finalized } : {}) };
    },
    drain() {
      draining = true;
    },
    async answerFilterCall(network, request, client) {
      const filters = runtimes.get(network)?.filters;
      if (!filters) return filterNotFound(request.id);
      try {
        return await filters.answerHere(request, client);
      } catch (error) {
        logger.error(
          { err: error, method: request.method },
          "unexpected error answering a forwarded filter call",
        );
        return errorResponse(request.id ?? null, RPC_ERROR.INTERNAL_ERROR, "internal error");
      }
    },
    async stop() {
      if (stopping) return;
      stopping = true;
      for (const session of sessions) session.close(1001, "server shutting down");
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      const timer = setTimeout(() => server.closeAllConnections(), settings.drainTimeout);
      await closed;
      clearTimeout(timer);
      wss.close();
      clearInterval(filterSweep);
      for (const runtime of runtimes.values()) {
        runtime.filters.close();
        runtime.feed.close();
        await runtime.upstreams.close();
      }
      await redis?.close();
      // Kept-alive connections to the nodes would hold the process open; a later gateway makes new ones.
      await closeUpstreamPools();
    },
  };
}
