import { CoordinationV1Api, CustomObjectsApi } from "@kubernetes/client-node";
import type { KubeConfig } from "@kubernetes/client-node";
import { makeApiClient } from "../api/kubeClients.js";
import type { HealthCheck } from "../../admin/adminServer.js";
import type { Config } from "../../config/schema.js";
import { Controller } from "../../controller/controller.js";
import type { Logger } from "../../log/logger.js";
import { createControllerMetrics } from "../../metrics/controllerMetrics.js";
import { createKubeCacheMetrics } from "../../metrics/kubeCacheMetrics.js";
import { createLeaderMetrics } from "../../metrics/leaderMetrics.js";
import { createProbeMetrics } from "../../metrics/probeMetrics.js";
import type { Registry } from "prom-client";
import { API_VERSION, GROUP, POOL_PLURAL, VERSION } from "../api/crds.js";
import type { LightNodePool } from "../api/crds.js";
import { staleCache } from "../api/cacheFreshness.js";
import { EventRecorder } from "../status/eventRecorder.js";
import { KubernetesFleet } from "../pods/kubernetesFleet.js";
import { LeaderElector } from "../leaderElection/leaderElector.js";
import { ListWatch } from "../api/listWatch.js";
import { POOL_KEY_LABELS } from "./poolKey.js";
import { resolvePools, type AcceptedSpec, type PoolNetwork, type RejectedPool } from "./poolNetworks.js";
import { clusterScaling, type ClusterScaling } from "../scaling/clusterScaling.js";
import { StatusWriter, type PoolRef } from "../status/statusWriter.js";

/** On shutdown, status writes still under way get this long, while the Lease is still held, to go out. */
const SHUTDOWN_WRITES_MS = 5_000;

export interface ClusterControllerOptions {
  config: Config;
  kubeConfig: KubeConfig;
  registry: Registry;
  logger: Logger;
  /** This replica's name in the Lease and in Events (the pod name). */
  identity: string;
  /** Namespace of the Lease. */
  leaseNamespace: string;
  clock?: () => number;
  /** Lease timings (tests shorten them). */
  lease?: { leaseDurationMs?: number; renewDeadlineMs?: number; retryPeriodMs?: number };
  /** A watch silent this long is restarted. */
  watchSilenceMs?: number;
}

export interface ClusterController {
  controller: Controller;
  fleet: KubernetesFleet;
  elector: LeaderElector;
  scaling: ClusterScaling;
  /** The pools run now (valid, one per network and namespace). */
  pools(): PoolNetwork[];
  /** Resolves once the LightNodePools have been listed and applied. */
  ready: Promise<void>;
  liveness: HealthCheck;
  readiness: HealthCheck;
  stop(): Promise<void>;
}

/**
 * The controller in a cluster: follows the LightNodePools (added, edited and deleted while it runs), runs the health
 * controller and the autoscaler over their pods, writes LightNode and pool statuses and Events, and acts only while it
 * holds the Lease.
 */
export function startClusterController(options: ClusterControllerOptions): ClusterController {
  const { config, kubeConfig, registry, logger, identity } = options;
  const clock = options.clock ?? Date.now;
  const namespace = config.controller.namespace;
  const custom = makeApiClient(kubeConfig, CustomObjectsApi);

  const cacheMetrics = createKubeCacheMetrics(registry, clock);
  const fleet = new KubernetesFleet({
    kubeConfig,
    pools: [],
    logger,
    clock,
    cacheMetrics,
    ...(options.watchSilenceMs !== undefined ? { watchSilenceMs: options.watchSilenceMs } : {}),
  });
  const elector = new LeaderElector({
    api: makeApiClient(kubeConfig, CoordinationV1Api),
    namespace: options.leaseNamespace,
    name: config.controller.lease.name,
    labels: config.controller.lease.labels,
    identity,
    logger,
    metrics: createLeaderMetrics(registry),
    clock,
    // A replica that stops leading drops its scaling numbers (only the leader's are exported) and its status writes
    // not yet sent (the new leader writes its own).
    onChange: (leading) => {
      rejectedWritten = "";
      refusalsRecorded = new Set();
      if (leading) {
        // A new leader marks the pools it will not run, as the last one may not have.
        schedule();
        return;
      }
      scaling.forget();
      writer.abandon();
    },
    ...options.lease,
  });
  let running: PoolNetwork[] = [];
  let refs = new Map<string, PoolRef>();
  const events = new EventRecorder(kubeConfig, { identity, logger, clock });
  const scaling = clusterScaling({
    config,
    kubeConfig,
    fleet,
    registry,
    logger,
    clock,
    events,
    cacheMetrics,
  });
  const writer = new StatusWriter(kubeConfig, {
    pools: () => refs,
    fleet,
    logger,
    events,
    clock,
    scaling: (key) => scaling.status(key),
  });
  const controller = new Controller({
    networks: [],
    fleet,
    logger,
    clock,
    metrics: createControllerMetrics(registry, POOL_KEY_LABELS),
    probeMetrics: createProbeMetrics(registry, POOL_KEY_LABELS),
    isLeader: () => elector.isLeader(),
    // The controller's networks are named by pool key (namespace/network): see poolKey.
    onRound: (key, output) => {
      const pool = refs.get(key);
      // Neither holds the round up: scaling reads rates and resizes, the writes go out in order per object.
      if (pool) scaling.round(pool, output);
      void writer.onRound(key, output);
    },
  });

  // Pools: every change of any LightNodePool re-resolves the whole set (a handful of objects), coalesced so a
  // relist of many pools applies once.
  /** The last spec this replica accepted per pool (namespace/name), run while a newer one is refused. */
  const accepted = new Map<string, AcceptedSpec>();
  /** Refusals this replica recorded as Events while it leads (pool, generation, reason). */
  let refusalsRecorded = new Set<string>();
  /** What the rejected pools' status says, as last written by this replica while it leads. */
  let rejectedWritten = "";
  const writeRejected = async (rejected: RejectedPool[]) => {
    // A refused pool that still runs has its refusal written with the rest of its status, each round.
    const idle = rejected.filter((r) => r.runsGeneration === undefined);
    const summary = idle
      .map(
        (r) =>
          `${r.pool.metadata.namespace}/${r.pool.metadata.name}@${r.pool.metadata.generation}:${r.message}`,
      )
      .join("\n");
    if (!elector.isLeader() || summary === rejectedWritten) return;
    rejectedWritten = summary;
    const writes = idle.map((r) =>
      writer
        .rejectPool(
          {
            namespace: r.pool.metadata.namespace ?? "default",
            name: r.pool.metadata.name,
            generation: r.pool.metadata.generation ?? 0,
            conditions: r.pool.status?.conditions ?? [],
          },
          r.reason,
          r.message,
        )
        .catch((error: unknown) => {
          rejectedWritten = "";
          logger.warn(
            { err: String(error), pool: r.pool.metadata.name },
            "could not write LightNodePool status",
          );
        }),
    );
    await Promise.all(writes);
  };
  /**
   * One Warning Event per refusal (pool, generation, reason), from the leader only: every replica resolves the pools,
   * and a refusal the pool's status already carries (written by an earlier leader) was recorded then.
   */
  const recordRefusals = (rejected: RejectedPool[]) => {
    if (!elector.isLeader()) return;
    const now = new Set<string>();
    for (const r of rejected) {
      const { metadata } = r.pool;
      const id = `${metadata.namespace}/${metadata.name}@${metadata.generation}:${r.reason}`;
      now.add(id);
      if (refusalsRecorded.has(id)) continue;
      const marked = r.pool.status?.conditions?.some(
        (c) =>
          c.type === "SpecAccepted" &&
          c.status === "False" &&
          c.reason === r.reason &&
          c.observedGeneration === metadata.generation,
      );
      if (marked) continue;
      logger.error({ pool: `${metadata.namespace}/${metadata.name}` }, r.message);
      void events.record({
        target: {
          kind: "LightNodePool",
          apiVersion: API_VERSION,
          namespace: metadata.namespace ?? "default",
          name: metadata.name,
          ...(metadata.uid ? { uid: metadata.uid } : {}),
        },
        type: "Warning",
        reason: r.reason,
        action: "Validate",
        note: r.message.slice(0, 1024),
      });
    }
    refusalsRecorded = now;
  };
  let applying: Promise<void> = Promise.resolve();
  let dirty = false;
  const apply = async (): Promise<void> => {
    dirty = false;
    const objects = poolCache.list();
    const { pools, rejected } = resolvePools(objects, accepted);
    const present = new Set(objects.map((o) => `${o.metadata.namespace ?? ""}/${o.metadata.name}`));
    for (const id of accepted.keys()) if (!present.has(id)) accepted.delete(id);
    const uids = new Map(
      objects.map((o) => [`${o.metadata.namespace ?? ""}/${o.metadata.name}`, o.metadata.uid]),
    );
    for (const p of pools) {
      if (p.ref.refusal || !p.ref.accepted) continue;
      const id = `${p.ref.namespace}/${p.ref.name}`;
      accepted.set(id, { uid: uids.get(id), ...p.ref.accepted });
    }
    recordRefusals(rejected);
    void writeRejected(rejected);
    const names = (list: PoolNetwork[]) => list.map((p) => `${p.ref.namespace}/${p.ref.name}`);
    const changed = names(pools).join() !== names(running).join();
    running = pools;
    refs = new Map(pools.map((p) => [p.key, p.ref]));
    await fleet.setPools(pools.map((p) => p.binding));
    scaling.setPools(pools);
    await controller.setNetworks(pools.map((p) => ({ ...p.network, name: p.key })));
    if (changed) logger.info({ pools: names(pools) }, "pools");
  };
  const schedule = () => {
    if (dirty) return;
    dirty = true;
    applying = applying.then(apply).catch((error: unknown) => {
      logger.error({ err: String(error) }, "could not apply the LightNodePools");
    });
  };
  const poolSelector = config.controller.poolSelector
    ? { labelSelector: config.controller.poolSelector }
    : {};
  let listed!: () => void;
  const ready = new Promise<void>((resolve) => (listed = resolve));
  const poolCache = new ListWatch<LightNodePool>({
    kubeConfig,
    path: namespace
      ? `/apis/${GROUP}/${VERSION}/namespaces/${namespace}/${POOL_PLURAL}`
      : `/apis/${GROUP}/${VERSION}/${POOL_PLURAL}`,
    list: async () =>
      (await (namespace
        ? custom.listNamespacedCustomObject({
            group: GROUP,
            version: VERSION,
            namespace,
            plural: POOL_PLURAL,
            ...poolSelector,
          })
        : custom.listClusterCustomObject({
            group: GROUP,
            version: VERSION,
            plural: POOL_PLURAL,
            ...poolSelector,
          }))) as {
        items: LightNodePool[];
        metadata?: { resourceVersion?: string };
      },
    what: "LightNodePool",
    ...poolSelector,
    logger,
    metrics: { recorder: cacheMetrics, scope: namespace || "all" },
    onChange: () => {
      schedule();
      void applying.then(listed);
    },
    clock,
    ...(options.watchSilenceMs !== undefined ? { silenceMs: options.watchSilenceMs } : {}),
  });

  elector.start();
  fleet.start();
  controller.start();
  poolCache.start();
  const stopScaling = scaling.start(() => void controller.runRound());

  return {
    controller,
    fleet,
    elector,
    scaling,
    pools: () => running,
    ready,
    liveness: {
      name: "caches",
      check: () => {
        const problem =
          staleCache("LightNodePool", poolCache.lastSync(), clock()) ??
          staleCache("pod", fleet.oldestSync(), clock());
        return problem ? { ok: false, message: problem } : { ok: true };
      },
    },
    readiness: {
      name: "pools",
      check: () =>
        poolCache.lastSync() === undefined
          ? { ok: false, message: "LightNodePools not listed yet" }
          : controller.readinessCheck().check(),
    },
    async stop() {
      poolCache.stop();
      stopScaling();
      await applying;
      await controller.stop();
      await settledWithin(writer.settled(), SHUTDOWN_WRITES_MS);
      await elector.stop();
      fleet.stop();
      await scaling.stop();
    },
  };
}

/** Waits for `settled`, or `ms` at most. */
async function settledWithin(settled: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([settled, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
}
