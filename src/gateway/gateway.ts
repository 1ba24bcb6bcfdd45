import { createServer } from "node:http";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Registry } from "prom-client";
import type { Config } from "../config/schema.js";
import type { BlockRef } from "../chain/blockRef.js";
import type { Logger } from "../log/logger.js";
import { createGatewayMetrics } from "../metrics/gatewayMetrics.js";
import type { JsonRpcRequest, JsonRpcResponse } from "../rpc/jsonRpc.js";
import { RPC_ERROR } from "../rpc/jsonRpc.js";
import { corsHeaders } from "./http/cors.js";
import { replyError } from "./http/replies.js";
import { readRequestBody } from "./http/requestBody.js";
import { RouteCache } from "./http/routeCache.js";
import type { NetworkRoute } from "./http/routes.js";
import { HttpAnswer } from "./http/httpAnswer.js";
import { sendAnswer } from "./http/sendAnswer.js";
import { clientAddress } from "./limits/clientAddress.js";
import { ConnectionCounts } from "./limits/connectionCap.js";
import type { ConnectionCap } from "./limits/connectionCap.js";
import { configuredRateLimiter } from "./limits/ipRateLimiter.js";
import type { RateLimiter, RateVerdict } from "./limits/ipRateLimiter.js";
import { callCount, callsOf, rateLimitRefusal } from "./limits/rateLimitRefusal.js";
import { errorResponse, parseBody } from "./rpc/parseRequest.js";
import type { ParsedBody } from "./rpc/parseRequest.js";
import { answerInto } from "./pipeline/answer.js";
import type { Answer, AnswerSteps, Refusal } from "./pipeline/answer.js";
import { openNetworkRuntime } from "./networkRuntime.js";
import type { FilterWorkers, NetworkRuntime } from "./networkRuntime.js";
import { filterNotFound } from "./filters/filterStore.js";
import { openRedisState } from "./sharedState/redisState.js";
import type { UpstreamSource } from "./upstreams/upstreamSource.js";
import { closeUpstreamPools } from "./upstreams/forward.js";
import { WsUpgrades } from "./ws/wsUpgrades.js";

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

  let draining = false;
  const routeCache = new RouteCache(routes);
  const upgrades = new WsUpgrades({
    settings,
    runtimes,
    routes: routeCache,
    connectionCap:
      options.connectionCap ??
      redis?.connectionCap ??
      new ConnectionCounts(settings.maxWsConnectionsPerAddress),
    admit,
    metrics,
    logger,
  });
  const cors = corsHeaders(settings.corsOrigins);
  const failed = (res: ServerResponse, error: unknown) => {
    // Never an unhandled rejection (which would end the process) nor a stack trace to the client.
    logger.error({ err: error }, "gateway: unexpected failure answering a request");
    if (!res.headersSent) replyError(res, 500, RPC_ERROR.INTERNAL_ERROR, "internal error");
    else res.destroy();
  };

  /** Each network's steps of answering a body, made once (see AnswerSteps). */
  const stepsOf = new Map<string, AnswerSteps>();
  for (const [network, runtime] of runtimes)
    stepsOf.set(network, {
      ...(limiter ? { admit: (parsed: ParsedBody, client: string) => admit(runtime, parsed, client) } : {}),
      call: (request, client) => runtime.handler.handle(request, client),
      callInto: (request, client, sink) => runtime.handler.handleInto(request, client, sink),
    });

  /**
   * Answers a body and writes the answer: at once when no node was asked (eth_blockNumber, refusals), else as the
   * node's answer comes in, with no promise between (see answerInto).
   */
  const answerText = (req: IncomingMessage, res: ServerResponse, steps: AnswerSteps, text: string): void => {
    let answered: Answer | undefined;
    try {
      answered = answerInto(
        parseBody(text, settings.maxBatchLength),
        steps,
        clientAddress(req, settings.trustForwardedFor),
        new HttpAnswer(req, res, failed),
      );
    } catch (error) {
      failed(res, error);
      return;
    }
    if (answered !== undefined) sendAnswer(req, res, answered);
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
      cors?.(req, res);
      const route = routeCache.of(req.headers.host, req.url ?? "/");
      if (!route || route.transport !== "http") {
        replyError(res, 404, RPC_ERROR.INVALID_REQUEST, "no network is served at this path");
        req.resume();
        return;
      }
      const steps = stepsOf.get(route.network)!;
      readRequestBody(req, res, settings.maxBodyBytes, (text) => answerText(req, res, steps, text));
    },
  );
  server.on("upgrade", (req, socket, head) => upgrades.handle(req, socket, head));
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
  let stopping = false;
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
      upgrades.closeSessions();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      const timer = setTimeout(() => server.closeAllConnections(), settings.drainTimeout);
      await closed;
      clearTimeout(timer);
      upgrades.close();
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
