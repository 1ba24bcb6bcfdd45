import {
  ApiException,
  AppsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  PatchStrategy,
  setHeaderOptions,
} from "@kubernetes/client-node";
import type { KubeConfig, V1Pod } from "@kubernetes/client-node";
import { makeApiClient } from "../api/kubeClients.js";
import { RESTART_REASONS } from "../../health/types.js";
import type { RestartReason, RestartRecord } from "../../health/types.js";
import { GROUP, NODE_PLURAL, VERSION } from "../api/crds.js";
import type { LightNode } from "../api/crds.js";
import type { Logger } from "../../log/logger.js";
import type { KubeCacheMetrics } from "../../metrics/kubeCacheMetrics.js";
import type { Fleet, FleetMember, RestartResult } from "../../fleet/fleet.js";
import { ListWatch } from "../api/listWatch.js";
import { memberOf, readinessPatch } from "./podRules.js";
import type { PoolBinding } from "./podRules.js";

/** How long a workload size read from the API is used before it is read again. */
const REPLICAS_TTL_MS = 15_000;

export interface KubernetesFleetOptions {
  kubeConfig: KubeConfig;
  pools: PoolBinding[];
  logger: Logger;
  clock?: () => number;
  /** Watches silent this long are restarted (see ListWatch). */
  watchSilenceMs?: number;
  cacheMetrics?: KubeCacheMetrics;
}

/**
 * The Fleet interface over Kubernetes: members are the pods a pool selects (with the lightfleet.io/in-sync readiness
 * gate); routing is that condition on pods/status, so every Service's EndpointSlices follow it; a restart is an
 * eviction, so PodDisruptionBudgets have their say; scaling goes through the workload's scale subresource. Pools are
 * named by their key (PoolBinding.key: namespace/network), so one network may have a pool in each namespace.
 */
export class KubernetesFleet implements Fleet {
  private readonly core: CoreV1Api;
  private readonly apps: AppsV1Api;
  private readonly watchers = new Map<string, { pool: PoolBinding; watcher: ListWatch<V1Pod> }>();
  private readonly listeners = new Set<(pool: string) => void>();
  /** Per pod, by `namespace/name` (two namespaces may each have a light-0). */
  private readonly restarts = new Map<string, RestartRecord[]>();
  private readonly clock: () => number;

  private started = false;
  /** Workload sizes per pool as last read or set (see replicas()). */
  private readonly sizes = new Map<string, { replicas: number; at: number }>();
  private updating: Promise<void> = Promise.resolve();

  constructor(private readonly options: KubernetesFleetOptions) {
    this.core = makeApiClient(options.kubeConfig, CoreV1Api);
    this.apps = makeApiClient(options.kubeConfig, AppsV1Api);
    this.clock = options.clock ?? Date.now;
    for (const pool of options.pools) this.watchers.set(pool.key, { pool, watcher: this.watcherFor(pool) });
  }

  start(): void {
    this.started = true;
    for (const { watcher } of this.watchers.values()) watcher.start();
  }

  /**
   * Replaces the set of pools (LightNodePools come, go and change while the controller runs). A new pool's restart
   * history is read back before its pods are listed, so it has no members (and nothing is restarted) until its
   * budgets are known; a pool whose namespace or selector changed is watched anew; other edits apply in place.
   */
  setPools(pools: readonly PoolBinding[]): Promise<void> {
    // One update at a time, in call order: a pool still reading its history must not be added twice.
    this.updating = this.updating.then(() => this.applyPools(pools));
    return this.updating;
  }

  private async applyPools(pools: readonly PoolBinding[]): Promise<void> {
    const wanted = new Map(pools.map((p) => [p.key, p]));
    for (const [key, entry] of this.watchers) {
      const next = wanted.get(key);
      if (
        next &&
        next.namespace === entry.pool.namespace &&
        next.labelSelector === entry.pool.labelSelector
      ) {
        entry.pool = next;
        this.sizes.delete(key); // the workload may be another one now
        wanted.delete(key);
        continue;
      }
      entry.watcher.stop();
      this.watchers.delete(key);
      this.sizes.delete(key);
      this.changed(key);
    }
    await Promise.all(
      [...wanted.values()].map(async (pool) => {
        await this.loadHistoryOf(pool);
        const watcher = this.watcherFor(pool);
        this.watchers.set(pool.key, { pool, watcher });
        if (this.started) watcher.start();
        this.changed(pool.key);
      }),
    );
  }

  private watcherFor(pool: PoolBinding): ListWatch<V1Pod> {
    return new ListWatch<V1Pod>({
      kubeConfig: this.options.kubeConfig,
      path: `/api/v1/namespaces/${pool.namespace}/pods`,
      list: () =>
        this.core.listNamespacedPod({ namespace: pool.namespace, labelSelector: pool.labelSelector }),
      labelSelector: pool.labelSelector,
      what: "pod",
      logger: this.options.logger.child({ network: pool.network, namespace: pool.namespace }),
      onChange: () => this.changed(pool.key),
      ...(this.options.watchSilenceMs !== undefined ? { silenceMs: this.options.watchSilenceMs } : {}),
      clock: this.clock,
      ...(this.options.cacheMetrics
        ? { metrics: { recorder: this.options.cacheMetrics, scope: pool.key } }
        : {}),
    });
  }

  /**
   * Reads a pool's restart history back from its LightNodes (written by an earlier controller), so restart budgets,
   * backoff and crash-loop detection survive a controller restart. A failure is logged: history starts empty then,
   * which only makes the controller more willing to restart.
   */
  private async loadHistoryOf(pool: PoolBinding): Promise<void> {
    const api = makeApiClient(this.options.kubeConfig, CustomObjectsApi);
    try {
      const list = (await api.listNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        namespace: pool.namespace,
        plural: NODE_PLURAL,
        labelSelector: `lightfleet.io/network=${pool.network}`,
      })) as { items: LightNode[] };
      for (const node of list.items) {
        const history = (node.status?.restartHistory ?? [])
          .map((r) => ({ at: Date.parse(r.time), reason: r.reason }))
          .filter((r) => Number.isFinite(r.at) && (RESTART_REASONS as readonly string[]).includes(r.reason));
        if (history.length > 0) this.restarts.set(`${pool.namespace}/${node.metadata.name}`, history);
      }
    } catch (error) {
      this.options.logger.warn(
        { err: String(error), network: pool.network, namespace: pool.namespace },
        "could not read restart history back",
      );
    }
  }

  stop(): void {
    this.started = false;
    for (const { watcher } of this.watchers.values()) watcher.stop();
  }

  /** Oldest cache sync over all pools (undefined until every pool has listed): /healthz fails when it is stale. */
  oldestSync(): number | undefined {
    let oldest: number | undefined;
    for (const { watcher } of this.watchers.values()) {
      const synced = watcher.lastSync();
      if (synced === undefined) return undefined;
      oldest = oldest === undefined ? synced : Math.min(oldest, synced);
    }
    return oldest;
  }

  /** Pods the pool selects that lack the readiness gate: left alone, and reported in the pool's status. */
  podsWithoutGate(pool: string): string[] {
    const entry = this.watchers.get(pool);
    if (!entry) return [];
    return entry.watcher
      .list()
      .filter((pod) => pod.status?.podIP && !memberOf(pod, entry.pool))
      .map((pod) => pod.metadata!.name!);
  }

  /** The uid of a pod, for owner references. */
  podUid(pool: string, pod: string): string | undefined {
    return this.watchers.get(pool)?.watcher.get(pod)?.metadata?.uid;
  }

  members(pool: string): FleetMember[] {
    const entry = this.watchers.get(pool);
    if (!entry) return [];
    const members: FleetMember[] = [];
    for (const pod of entry.watcher.list()) {
      const member = memberOf(pod, entry.pool);
      if (member)
        members.push({
          ...member,
          restarts: this.restarts.get(`${entry.pool.namespace}/${member.name}`) ?? [],
        });
    }
    return members.sort((a, b) => a.name.localeCompare(b.name));
  }

  async setRouted(pool: string, member: string, routed: boolean): Promise<void> {
    const entry = this.watchers.get(pool);
    const pod = entry?.watcher.get(member);
    if (!entry || !pod) return;
    const body = readinessPatch(pod, routed, this.clock());
    if (!body) return;
    const patched = await this.core.patchNamespacedPodStatus(
      { name: member, namespace: entry.pool.namespace, body },
      setHeaderOptions("Content-Type", PatchStrategy.StrategicMergePatch),
    );
    if (patched?.metadata?.name) entry.watcher.update(patched);
  }

  async restart(pool: string, member: string, reason: RestartReason): Promise<RestartResult> {
    const entry = this.watchers.get(pool);
    const pod = entry?.watcher.get(member);
    if (!entry || !pod) return { outcome: "gone" };
    const uid = pod.metadata?.uid;
    try {
      await this.core.createNamespacedPodEviction({
        name: member,
        namespace: entry.pool.namespace,
        body: {
          apiVersion: "policy/v1",
          kind: "Eviction",
          metadata: { name: member, namespace: entry.pool.namespace },
          // Only the pod the engine judged: a StatefulSet's replacement of the same name (not yet in the cache)
          // fails the precondition (409) and is judged on its own probes.
          ...(uid ? { deleteOptions: { preconditions: { uid } } } : {}),
        },
      });
    } catch (error) {
      if (error instanceof ApiException && error.code === 409) return { outcome: "gone" };
      if (error instanceof ApiException && error.code === 429)
        return {
          outcome: "deferred",
          message: "eviction refused for now (PodDisruptionBudget); retried later",
        };
      if (error instanceof ApiException && error.code === 404) return { outcome: "gone" };
      throw error;
    }
    const podKey = `${entry.pool.namespace}/${member}`;
    const history = [...(this.restarts.get(podKey) ?? []), { at: this.clock(), reason }];
    this.restarts.set(podKey, history.slice(-20));
    return { outcome: "restarted" };
  }

  /**
   * The size the workload is asked to have (`spec.replicas` of its scale subresource): the autoscaler's current size.
   * Pods lag behind it while they are created or end, and a step computed from them would undo a scale-up under way.
   * Read at most every REPLICAS_TTL_MS per pool (as an HPA syncs every 15 s), not on every round; a size this fleet
   * sets is known at once.
   */
  async replicas(pool: string): Promise<number> {
    const entry = this.watchers.get(pool);
    if (!entry) throw new Error(`no pool ${pool}`);
    const known = this.sizes.get(pool);
    if (known && this.clock() - known.at < REPLICAS_TTL_MS) return known.replicas;
    const { kind, name } = entry.pool.workload;
    const request = { name, namespace: entry.pool.namespace };
    const scale =
      kind === "StatefulSet"
        ? await this.apps.readNamespacedStatefulSetScale(request)
        : await this.apps.readNamespacedDeploymentScale(request);
    const replicas = scale.spec?.replicas ?? 0;
    this.sizes.set(pool, { replicas, at: this.clock() });
    return replicas;
  }

  async scale(pool: string, replicas: number): Promise<void> {
    const entry = this.watchers.get(pool);
    if (!entry) throw new Error(`no pool ${pool}`);
    const { kind, name } = entry.pool.workload;
    const request = { name, namespace: entry.pool.namespace, body: { spec: { replicas } } };
    const options = setHeaderOptions("Content-Type", PatchStrategy.MergePatch);
    if (kind === "StatefulSet") await this.apps.patchNamespacedStatefulSetScale(request, options);
    else await this.apps.patchNamespacedDeploymentScale(request, options);
    this.sizes.set(pool, { replicas, at: this.clock() });
  }

  onChange(listener: (pool: string) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private changed(pool: string): void {
    for (const listener of this.listeners) listener(pool);
  }
}
