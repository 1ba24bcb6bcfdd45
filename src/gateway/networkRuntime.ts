import type { Config } from "../config/schema.js";
import type { Logger } from "../log/logger.js";
import type { GatewayMetrics } from "../metrics/gatewayMetrics.js";
import type { JsonRpcRequest, JsonRpcResponse } from "../rpc/jsonRpc.js";
import { FilterStore } from "./filters/filterStore.js";
import type { FilterQuota, FilterStoreOptions, Filters } from "./filters/filterStore.js";
import { configuredRateLimiter } from "./limits/ipRateLimiter.js";
import { CallExecutor } from "./pipeline/callExecutor.js";
import { RedisFilters } from "./sharedState/redisFilters.js";
import type { openRedisState } from "./sharedState/redisState.js";
import { RedisAnswers } from "./sharedState/redisAnswers.js";
import { SharedHead } from "./sharedState/sharedHead.js";
import { NetworkUpstreams } from "./upstreams/networkUpstreams.js";
import type { UpstreamSource } from "./upstreams/upstreamSource.js";
import { HeadFeed } from "./ws/headFeed.js";
import { NetworkStreams } from "./ws/networkStreams.js";

/** How this worker's filters live with the other workers'. */
export interface FilterWorkers {
  /** This worker's id, named in the ids of its filters. */
  owner: number;
  /** Each address's filters counted over all workers (the address prefixed with the network). */
  quota: FilterQuota;
  /** Answers a call on another worker's filter by that worker. */
  forward(owner: number, network: string, request: JsonRpcRequest, client: string): Promise<JsonRpcResponse>;
}

/** One network as the gateway serves it: its nodes, its call path, its head feed and streams, its filters. */
export interface NetworkRuntime {
  upstreams: NetworkUpstreams;
  handler: CallExecutor;
  feed: HeadFeed;
  streams: NetworkStreams;
  filters: Filters;
}

export interface NetworkRuntimeContext {
  config: Config;
  source: UpstreamSource;
  logger: Logger;
  metrics: GatewayMetrics;
  /** The state shared with every replica, when kept in Redis. */
  redis: ReturnType<typeof openRedisState> | undefined;
  filterWorkers?: FilterWorkers;
  /** Counts a call sent to a node (the autoscaler's rate). */
  count: () => void;
}

/** Wires one network: its upstreams, call executor, head feed, streams and filters (in process or in Redis). */
export function openNetworkRuntime(
  network: Config["networks"][number],
  context: NetworkRuntimeContext,
): NetworkRuntime {
  const { config, logger, metrics, redis } = context;
  const settings = config.gateway;
  const workers = context.filterWorkers;
  const log = logger.child({ component: "gateway", network: network.name });
  const upstreams = new NetworkUpstreams({
    network: network.name,
    chainId: network.chainId,
    source: context.source,
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
  const handler = new CallExecutor({
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
    ...(redis && network.gateway.cache.enabled && network.gateway.cache.shared
      ? {
          sharedAnswers: new RedisAnswers({
            store: redis.store,
            network: network.name,
            ttlMs: network.gateway.cache.sharedTtl,
          }),
        }
      : {}),
    // Answers by number are cached only at or below the block the reserved peers agree is finalized.
    finalizedNumber: () => upstreams.finalized()?.number,
    ...(sharedHead ? { sharedHead } : {}),
    metrics,
    logger: log,
    count: context.count,
  });
  const feed = new HeadFeed({
    upstreams,
    timeoutMs: Math.min(settings.upstreamTimeout, 5_000),
    logger: log,
    // A head is in the shared mark before any client is sent it.
    ...(sharedHead ? { beforeAnnounce: (height: number) => sharedHead.raise(height) } : {}),
  });
  const streams = new NetworkStreams(feed, handler, log, () => {
    const local = upstreams.servedHead();
    return sharedHead && local !== undefined ? sharedHead.current(local) : undefined;
  });
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
          const shared = await sharedHead.head(local);
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
    // Each new head above the shared mark raises it at once (one write per new head, none per call), not only at the
    // next call: filter polls on other replicas read up to it.
    if (served !== undefined && sharedHead) void sharedHead.raise(served);
  });
  metrics.panicMode.set({ network: network.name }, 0);
  return { upstreams, handler, feed, streams, filters };
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
