import cluster from "node:cluster";
import type { Worker } from "node:cluster";
import type { Config } from "../../config/schema.js";
import type { Logger } from "../../log/logger.js";
import { createRegistry } from "../../metrics/registry.js";
import { serveUntilStopping } from "../adminAndShutdown.js";
import type { GatewayFlags } from "../gatewayProcess.js";
import { networksWithoutHead, openGateway, untilSignal } from "../gatewayProcess.js";
import { answerMetricsRequests, ClusterMetrics } from "./clusterMetrics.js";
import { configuredRateLimiter } from "../limits/ipRateLimiter.js";
import {
  isConnectionAcquire,
  isConnectionRelease,
  isDrainWorker,
  isFilterCall,
  isFilterReply,
  isRateSpending,
  isStopWorker,
  isWorkerStatus,
  whenChanged,
} from "./messages.js";
import type {
  ConnectionGrant,
  DrainWorker,
  FilterReply,
  RateSpending,
  StopWorker,
  WorkerStatus,
} from "./messages.js";
import { ClusterConnectionCounts, PrimaryConnectionCap } from "./sharedConnectionCap.js";
import { FilterCallRelay, ForwardedFilterCalls } from "./sharedFilters.js";
import { SharedRateLimiter } from "./sharedRateLimit.js";

/** How often a worker reports its served heads (the primary's /readyz). */
const REPORT_MS = 500;
/**
 * How often a worker tells the others what its clients spent of their rate limits: how long an address spreading its
 * calls over the workers may overspend.
 */
const SHARE_SPENDING_MS = 100;
/** A worker that dies before serving is replaced after this long, so a worker that cannot start does not spin. */
const RESTART_BACKOFF_MS = 1_000;
/**
 * How much longer than a call to a node a worker waits for another worker's answer on a filter it holds
 * (eth_getFilterLogs asks a node): beyond, the client is told to poll again.
 */
const FILTER_FORWARD_SLACK_MS = 5_000;

/**
 * The cluster primary: forks `count` workers (`gateway.workers`, `auto` resolved) sharing the public port, serves the admin port (metrics summed
 * over the workers, ready when every worker serves a head), replaces a worker that dies and drains them all on SIGINT
 * or SIGTERM.
 */
export async function runPrimary(
  config: Config,
  logger: Logger,
  flags: GatewayFlags,
  count: number,
): Promise<void> {
  // Round robin by the primary spreads connections evenly; NODE_CLUSTER_SCHED_POLICY=none leaves it to the kernel.
  if (process.env.NODE_CLUSTER_SCHED_POLICY === undefined) cluster.schedulingPolicy = cluster.SCHED_RR;
  const statuses = new Map<number, WorkerStatus>();
  let stopping = false;
  let onReport: (() => void) | undefined;
  const metrics = new ClusterMetrics(() =>
    Object.values(cluster.workers ?? {}).filter(
      (w): w is Worker => w !== undefined && w.isConnected() && statuses.has(w.id),
    ),
  );

  // WebSocket connections per address, counted over all workers (the cap is per address, not per worker).
  const connections = new ClusterConnectionCounts(config.gateway.maxWsConnectionsPerAddress);
  // Filters per address (and network), counted the same way: a client's filters may sit on every worker.
  const filterCounts = new ClusterConnectionCounts(config.gateway.maxFiltersPerAddress);
  const countsOf = (message: { pool?: string }) => (message.pool === "filters" ? filterCounts : connections);
  // A filter call that landed on a worker other than the filter's: sent on to the owner, its reply back.
  const filterCalls = new FilterCallRelay((id, message) => {
    const worker = cluster.workers?.[id];
    if (!worker?.isConnected()) return false;
    worker.send(message);
    return true;
  });
  // What one worker's clients spent is charged by every other worker (see SharedRateLimiter).
  const shareSpending = (from: Worker, message: RateSpending) => {
    for (const worker of Object.values(cluster.workers ?? {}))
      if (worker && worker !== from && worker.isConnected()) worker.send(message);
  };

  const fork = (): Worker => {
    const worker = cluster.fork();
    worker.on("message", (message: unknown) => {
      if (metrics.receive(message)) return;
      if (isRateSpending(message)) return shareSpending(worker, message);
      if (isConnectionAcquire(message)) {
        const counts = countsOf(message);
        const ok = counts.acquire(worker.id, message.address);
        const grant: ConnectionGrant = {
          kind: "lightfleet-gateway-ws-grant",
          id: message.id,
          ok,
          ...(message.pool ? { pool: message.pool } : {}),
        };
        if (worker.isConnected()) worker.send(grant);
        else counts.release(worker.id, message.address);
        return;
      }
      if (isConnectionRelease(message)) return countsOf(message).release(worker.id, message.address);
      if (isFilterCall(message)) return filterCalls.call(worker.id, message);
      if (isFilterReply(message)) return filterCalls.reply(message);
      if (!isWorkerStatus(message) || worker.isDead()) return;
      statuses.set(worker.id, message);
      onReport?.();
    });
    return worker;
  };

  // Every worker listening before the primary says it serves; one that exits while starting fails the command.
  const started = new Promise<void>((resolve, reject) => {
    const onExit = (worker: Worker, code: number | null, signal: string | null) => {
      onReport = undefined;
      reject(
        new Error(
          `gateway worker ${worker.process.pid} exited while starting (code ${code}, signal ${signal})`,
        ),
      );
    };
    onReport = () => {
      if (statuses.size < count) return;
      onReport = undefined;
      cluster.off("exit", onExit);
      resolve();
    };
    cluster.once("exit", onExit);
  });
  for (let i = 0; i < count; i++) fork();
  try {
    await started;
  } catch (error) {
    stopping = true;
    for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill("SIGKILL");
    throw error;
  }

  cluster.on("exit", (worker, code, signal) => {
    const served = statuses.delete(worker.id);
    connections.releaseWorker(worker.id);
    filterCounts.releaseWorker(worker.id);
    filterCalls.workerGone(worker.id);
    metrics.retire(worker.id);
    if (stopping) return;
    logger.error(
      { workerPid: worker.process.pid, code, signal },
      "gateway worker exited; starting a replacement",
    );
    if (served) fork();
    else setTimeout(() => stopping || fork(), RESTART_BACKOFF_MS);
  });

  const admin = await serveUntilStopping(config, logger, flags, {
    registry: metrics,
    ready: () => {
      if (statuses.size < count)
        return { ok: false, message: `${statuses.size} of ${count} workers serving` };
      const missing = networksWithoutHead(config, (n) =>
        [...statuses.values()].some((s) => s.heads[n] == null) ? undefined : 0,
      );
      return missing.length === 0
        ? { ok: true }
        : { ok: false, message: `no head yet for ${missing.join(", ")} in every worker` };
    },
    // Like one process: a cache not listed yet does not fail liveness, the stalest listed one may.
    ...(config.networks.some((n) => n.gateway.service)
      ? {
          slicesSynced: () => {
            const synced = [...statuses.values()].flatMap((s) =>
              s.slicesSynced == null ? [] : [s.slicesSynced],
            );
            return synced.length > 0 ? Math.min(...synced) : undefined;
          },
        }
      : {}),
    // The workers serve on through the delay; the primary's /readyz is the pod's.
    drain: () => {
      for (const worker of Object.values(cluster.workers ?? {}))
        if (worker?.isConnected()) worker.send({ kind: "lightfleet-gateway-drain" } satisfies DrainWorker);
    },
    describe: { url: [...statuses.values()][0]!.url, workers: count },
  });
  stopping = true;
  logger.info("gateway stopping: draining every worker's requests, closing WebSockets");
  await stopWorkers(config.gateway.drainTimeout + 5_000, logger);
  await admin.close();
}

/** Asks every worker to drain and waits for them to exit; the ones still running after `timeoutMs` are killed. */
async function stopWorkers(timeoutMs: number, logger: Logger): Promise<void> {
  const workers = Object.values(cluster.workers ?? {}).filter((w): w is Worker => w !== undefined);
  const exited = workers.map(
    (worker) =>
      new Promise<void>((resolve) => {
        if (worker.isDead()) return resolve();
        worker.once("exit", () => resolve());
        if (worker.isConnected()) worker.send({ kind: "lightfleet-gateway-stop" } satisfies StopWorker);
      }),
  );
  const timer = setTimeout(() => {
    for (const worker of workers)
      if (!worker.isDead()) {
        logger.error({ workerPid: worker.process.pid }, "gateway worker did not drain in time; killing it");
        worker.process.kill("SIGKILL");
      }
  }, timeoutMs);
  await Promise.all(exited);
  clearTimeout(timer);
}

/** A worker: the gateway on the shared port, its metrics answered to the primary, until told to stop. */
export async function runWorker(config: Config, parentLogger: Logger, flags: GatewayFlags): Promise<void> {
  const logger = parentLogger.child({ worker: cluster.worker?.id });
  const registry = createRegistry();
  answerMetricsRequests(registry);
  const local =
    config.gateway.sharedState.backend === "memory"
      ? configuredRateLimiter(config.gateway.rateLimit)
      : undefined;
  const limiter =
    local &&
    new SharedRateLimiter(local, {
      everyMs: SHARE_SPENDING_MS,
      send: (spent) => process.connected && process.send?.({ kind: "lightfleet-gateway-spent", spent }),
    });
  // With a cap, every WebSocket connection is counted by the primary, for all workers.
  const connectionCap =
    config.gateway.maxWsConnectionsPerAddress === undefined
      ? undefined
      : new PrimaryConnectionCap((message) => process.connected && process.send?.(message));
  const toPrimary = (message: unknown): boolean => {
    if (!process.connected || !process.send) return false;
    process.send(message);
    return true;
  };
  // Filters stay with the worker that made them; calls on them that land here are forwarded (see FilterStore).
  const filterQuota = new PrimaryConnectionCap(toPrimary, "filters");
  const forwarded = new ForwardedFilterCalls(
    toPrimary,
    config.gateway.upstreamTimeout + FILTER_FORWARD_SLACK_MS,
  );
  // With the state in Redis, every worker keeps it there like any replica: nothing goes through the primary.
  const viaPrimary = config.gateway.sharedState.backend === "memory";
  const { gateway, source, slices } = await openGateway(
    config,
    logger,
    registry,
    flags.port,
    viaPrimary
      ? {
          ...(limiter ? { rateLimiter: limiter } : {}),
          ...(connectionCap ? { connectionCap } : {}),
          filterWorkers: {
            owner: cluster.worker!.id,
            quota: filterQuota,
            forward: (owner, network, request, client) => forwarded.forward(owner, network, request, client),
          },
        }
      : {},
  );
  process.on("message", (message: unknown) => {
    if (isDrainWorker(message)) return gateway.drain();
    if (connectionCap?.receive(message)) return;
    if (filterQuota.receive(message) || forwarded.receive(message)) return;
    if (isFilterCall(message))
      return void gateway
        .answerFilterCall(message.network, message.request, message.client)
        .then((response) =>
          toPrimary({
            kind: "lightfleet-gateway-filter-reply",
            id: message.id,
            response,
          } satisfies FilterReply),
        );
    if (limiter && isRateSpending(message)) limiter.debit(message.spent);
  });
  const sendStatus = whenChanged((status: WorkerStatus) => process.send?.(status));
  const report = () => {
    if (!process.connected) return;
    const status: WorkerStatus = {
      kind: "lightfleet-gateway-status",
      url: gateway.url,
      heads: Object.fromEntries(config.networks.map((n) => [n.name, gateway.servedHead(n.name) ?? null])),
      ...(slices ? { slicesSynced: slices.oldestSync() ?? null } : {}),
    };
    sendStatus(status);
  };
  report();
  const timer = setInterval(report, REPORT_MS);
  logger.info({ url: gateway.url }, "gateway worker listening");
  await new Promise<void>((resolve) => {
    void untilSignal().then(resolve);
    process.on("message", (message: unknown) => isStopWorker(message) && resolve());
    // The primary is gone (killed): a worker left alone would hold the port.
    process.once("disconnect", resolve);
  });
  clearInterval(timer);
  limiter?.close();
  await gateway.stop();
  await source.close?.();
  if (process.connected) process.disconnect();
}
