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
import { CallHandler } from "./rpc/callHandler.js";
import { errorResponse, parseBody } from "./rpc/parseRequest.js";
import type { ParsedBody } from "./rpc/parseRequest.js";
import { serializeBody } from "./rpc/serialize.js";
import { NetworkUpstreams } from "./upstreams/networkUpstreams.js";
import { FilterStore, filterNotFound } from "./filters/filterStore.js";
import type { FilterQuota, FilterStoreOptions, Filters } from "./filters/filterStore.js";
import { RedisFilters } from "./sharedState/redisFilters.js";
import { openRedisState } from "./sharedState/redisState.js";
import { SharedHead } from "./sharedState/sharedHead.js";
import type { UpstreamSource } from "./upstreams/upstreamSource.js";
import { closeUpstreamPools } from "./upstreams/forward.js";
import { HeadFeed } from "./ws/headFeed.js";
import { NetworkStreams } from "./ws/networkStreams.js";
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

/** How this worker's filters live with the other workers'. */
export interface FilterWorkers {
  /** This worker's id, named in the ids of its filters. */
  owner: number;
  /** Each address's filters counted over all workers (the address prefixed with the network). */
  quota: FilterQuota;
  /** Answers a call on another worker's filter by that worker. */
  forward(owner: number, network: string, request: JsonRpcRequest, client: string): Promise<JsonRpcResponse>;
}

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

type Body = JsonRpcResponse | JsonRpcResponse[] | undefined;

interface Answer {
  status: number;
  body: Body;
  retryAfterMs?: number;
}

/** The content types geth takes for JSON-RPC (with any parameters, such as a charset). */
const JSON_TYPE = /^application\/(?:json|jsonrequest|json-rpc)\s*(?:;|$)/i;
/** Answers smaller than this go out uncompressed even to clients that take gzip: compressing them gains nothing. */
const GZIP_MIN_BYTES = 1024;
const TAKES_GZIP = /\bgzip\b(?!\s*;\s*q=0(?:\.0*)?\s*(?:,|$))/i;

interface NetworkRuntime {
  upstreams: NetworkUpstreams;
  handler: CallHandler;
  feed: HeadFeed;
  streams: NetworkStreams;
  filters: Filters;
}

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
    const log = logger.child({ component: "gateway", network: network.name });
    const upstreams = new NetworkUpstreams({
      network: network.name,
      chainId: network.chainId,
      source: options.source,
      pollIntervalMs: settings.headPollInterval,
      timeoutMs: Math.min(settings.upstreamTimeout, 5_000),
      logger: log,
      peers: network.reservedPeers,
    });
    metrics.countCallSockets(network.name, () => upstreams.openCallSockets());
    // eth_blockNumber calls waiting for this replica's nodes to reach the shared head each listen for a while.
    if (redis) upstreams.setMaxListeners(0);
    const sharedHead =
      redis &&
      new SharedHead({
        store: redis.store,
        network: network.name,
        waitForHead: (target) => untilHead(upstreams, target, Math.min(network.blockTimeMs, 1_000)),
      });
    const handler = new CallHandler({
      upstreams,
      getLogsMaxRange: network.gateway.getLogsMaxRange,
      blockTimeMs: network.blockTimeMs,
      ...(redis?.senderLimiter
        ? { senderLimiter: redis.senderLimiter }
        : settings.transactionLimit
          ? {
              senderLimiter: configuredRateLimiter({
                requestsPerSecond: settings.transactionLimit.perSenderPerSecond,
                ...(settings.transactionLimit.burst ? { burst: settings.transactionLimit.burst } : {}),
              }),
            }
          : {}),
      transactionPeers: network.gateway.sendTransactionsToPeers
        ? network.reservedPeers.map((peer) => ({ name: peer.name, httpUrl: peer.http }))
        : [],
      upstreamTimeoutMs: settings.upstreamTimeout,
      hedge: network.gateway.hedge,
      hungNodes: network.gateway.hungNodes,
      cache: network.gateway.cache,
      // Answers by number are cached only at or below the block the reserved peers agree is finalized.
      finalizedNumber: () => upstreams.finalized()?.number,
      ...(sharedHead ? { sharedHead } : {}),
      metrics,
      logger: log,
      count: () => totals.set(network.name, (totals.get(network.name) ?? 0) + 1),
    });
    const feed = new HeadFeed({
      upstreams,
      timeoutMs: Math.min(settings.upstreamTimeout, 5_000),
      logger: log,
    });
    const streams = new NetworkStreams(feed, handler, log);
    const filters: Filters = redis
      ? new RedisFilters({
          store: redis.store,
          network: network.name,
          maxPerClient: settings.maxFiltersPerAddress,
          timeoutMs: settings.filterTimeout,
          // Changes up to the head any replica served (waiting briefly for this one's nodes), so a client that saw
          // a block on one replica finds its changes on the next one it polls.
          servedHead: async () => {
            const local = upstreams.servedHead();
            if (local === undefined || !sharedHead) return local;
            const shared = await sharedHead.blockNumber(local);
            return Math.min(shared, upstreams.servedHead() ?? local);
          },
          fetch: (request) => handler.fetch(request),
          getLogs: (request) => handler.handle(request),
        })
      : new FilterStore({
          streams,
          getLogs: (request) => handler.handle(request),
          maxPerClient: settings.maxFiltersPerAddress,
          timeoutMs: settings.filterTimeout,
          ...(workers ? filterStoreWorkers(workers, network.name) : {}),
        });
    handler.useFilters(filters);
    upstreams.on("change", () => {
      metrics.panicMode.set({ network: network.name }, upstreams.panic() ? 1 : 0);
      const served = upstreams.servedHead();
      if (served !== undefined) metrics.servedHead.set({ network: network.name }, served);
      // Each new head raises the shared mark at once, not only at the next eth_blockNumber: filter polls on other
      // replicas read up to it.
      if (served !== undefined && sharedHead) void sharedHead.blockNumber(served);
    });
    metrics.panicMode.set({ network: network.name }, 0);
    runtimes.set(network.name, { upstreams, handler, feed, streams, filters });
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
  type Refusal = { body: JsonRpcResponse | JsonRpcResponse[]; retryAfterMs: number } | undefined;
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
  const send = (req: IncomingMessage, res: ServerResponse, answer: Answer) => {
    if (answer.body === undefined) {
      res.writeHead(200, { "content-type": "application/json", "content-length": 0 }).end();
      return;
    }
    const text = serializeBody(answer.body);
    const extra: Record<string, string> =
      answer.retryAfterMs === undefined
        ? {}
        : { "retry-after": String(Math.ceil(answer.retryAfterMs / 1000)) };
    const accepts = req.headers["accept-encoding"];
    if (text.length < GZIP_MIN_BYTES || accepts === undefined || !TAKES_GZIP.test(accepts)) {
      reply(res, answer.status, text, extra);
      return;
    }
    gzip(text, (error, zipped) => {
      if (error) return reply(res, answer.status, text, extra);
      res.writeHead(answer.status, {
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
      const answerText = (text: string) => {
        let answer: Answer | Promise<Answer>;
        try {
          answer = answerBody(runtimes.get(route.network)!, text, req);
        } catch (error) {
          failed(res, error);
          return;
        }
        // Answered without a node (eth_blockNumber, refusals): written at once, no promise in between.
        if (!(answer instanceof Promise)) send(req, res, answer);
        else
          answer.then(
            (a) => send(req, res, a),
            (error: unknown) => failed(res, error),
          );
      };
      req.on("end", () => {
        if (size > settings.maxBodyBytes) return;
        // A body that came in one chunk is decoded without a copy.
        const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
        if (!gzipped) return answerText(body.toString("utf8"));
        // Inflated to at most maxBodyBytes, so a small compressed body cannot become a huge one.
        gunzip(body, { maxOutputLength: settings.maxBodyBytes }, (error, inflated) => {
          if (!error) return answerText(inflated.toString("utf8"));
          if ((error as NodeJS.ErrnoException).code === "ERR_BUFFER_TOO_LARGE") return tooLarge(res);
          replyError(res, 400, RPC_ERROR.PARSE_ERROR, "parse error: the body is not valid gzip");
        });
      });
    },
  );

  function answerBody(runtime: NetworkRuntime, text: string, req: IncomingMessage): Answer | Promise<Answer> {
    const parsed = parseBody(text, settings.maxBatchLength);
    const address = clientAddress(req, settings.trustForwardedFor);
    if (limiter) {
      const refused = admit(runtime, parsed, address);
      if (refused instanceof Promise)
        return refused.then((r) => (r ? { status: 429, ...r } : answerAdmitted(runtime, parsed, address)));
      if (refused) return { status: 429, ...refused };
    }
    return answerAdmitted(runtime, parsed, address);
  }

  function answerAdmitted(
    runtime: NetworkRuntime,
    parsed: ParsedBody,
    address: string,
  ): Answer | Promise<Answer> {
    const body = answerParsed(runtime, parsed, address);
    return body instanceof Promise ? body.then((b) => ({ status: 200, body: b })) : { status: 200, body };
  }

  function answerParsed(runtime: NetworkRuntime, parsed: ParsedBody, address: string): Body | Promise<Body> {
    if (parsed.kind === "error") return parsed.response;
    if (parsed.kind === "single") {
      if (!parsed.item.ok) return parsed.item.response;
      const notification = parsed.item.request.id === undefined;
      const response = runtime.handler.handle(parsed.item.request, address);
      if (response instanceof Promise) return notification ? response.then(() => undefined) : response;
      return notification ? undefined : response;
    }
    return Promise.all(
      parsed.items.map((item) => (item.ok ? runtime.handler.handle(item.request, address) : item.response)),
    ).then((responses) => {
      const answered = responses.filter((_, i) => {
        const item = parsed.items[i]!;
        return !item.ok || item.request.id !== undefined;
      });
      return answered.length > 0 ? answered : undefined;
    });
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
        (parsed) => {
          const refused = admit(runtime, parsed, address);
          return refused instanceof Promise ? refused.then((r) => r?.body) : refused?.body;
        },
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

/** A network's filter store as one of several workers: its ids name this worker, its counts are per network. */
function filterStoreWorkers(
  workers: FilterWorkers,
  network: string,
): Pick<FilterStoreOptions, "owner" | "quota" | "forward"> {
  const key = (client: string) => `${network} ${client}`;
  return {
    owner: workers.owner,
    quota: {
      acquire: (client) => workers.quota.acquire(key(client)),
      release: (client) => workers.quota.release(key(client)),
    },
    forward: (owner, request, client) => workers.forward(owner, network, request, client),
  };
}

/** Resolves once the network's served head reaches `target`, or after `timeoutMs`: the served head then. */
function untilHead(
  upstreams: NetworkUpstreams,
  target: number,
  timeoutMs: number,
): Promise<number | undefined> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      upstreams.off("change", check);
      resolve(upstreams.servedHead());
    };
    const check = () => {
      if ((upstreams.servedHead() ?? -1) >= target) done();
    };
    const timer = setTimeout(done, timeoutMs);
    upstreams.on("change", check);
    check();
  });
}
