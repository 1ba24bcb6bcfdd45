import { ApiException, CustomObjectsApi, PatchStrategy, setHeaderOptions } from "@kubernetes/client-node";
import type { KubeConfig } from "@kubernetes/client-node";
import { makeApiClient } from "../api/kubeClients.js";
import type { EngineOutput } from "../../health/types.js";
import type { Logger } from "../../log/logger.js";
import type { PoolScalingStatus } from "../../scaling/poolScalingStatus.js";
import type { ScalingMemory } from "../../scaling/decideScale.js";
import type { Fleet } from "../../fleet/fleet.js";
import { API_VERSION, GROUP, NODE_PLURAL, POOL_PLURAL, VERSION } from "../api/crds.js";
import type { Condition, LightNodePoolSpec, LightNodePoolStatus, LightNodeStatus } from "../api/crds.js";
import type { EventRecorder } from "./eventRecorder.js";
import { eventsOfRound } from "./eventRecorder.js";
import { KeyedWrites } from "./keyedWrites.js";
import {
  lightNodeStatus,
  nodeNews,
  poolHealthStatus,
  poolNews,
  rejectedPoolStatus,
  statusMergePatch,
} from "./statusObjects.js";
import {
  DEFAULT_WRITE_THROTTLE,
  WriteBudget,
  pickWrites,
  sentNow,
  writeCandidate,
  writeNeed,
  type SentStatus,
  type WriteCandidate,
  type WriteThrottleOptions,
} from "./writeThrottle.js";

export interface PoolRef {
  /** The name the pool runs under in the controller (poolKey: namespace/network). */
  key: string;
  network: string;
  namespace: string;
  /** LightNodePool name. */
  name: string;
  /** LightNodePool uid: Events carry it, so `kubectl describe lightnodepool` lists them. */
  uid?: string;
  generation: number;
  /** The spec the pool runs: this generation's, or the last accepted one while a newer spec is refused. */
  accepted?: { generation: number; spec: LightNodePoolSpec };
  /** The scale-down window as the last leader wrote it in the pool's status (see Scaler's initialMemory). */
  scalingMemory?: ScalingMemory;
  /** Why the pool's current spec is refused, when it is. */
  refusal?: { reason: string; message: string };
}

/** What the writer remembers of one pod's LightNode. */
interface NodeRecord {
  /** What the last status sent said, and when; undefined until then (or after a failed write). */
  sent?: SentStatus;
  /** The pod uid the LightNode was created for ("" for a pod whose uid is unknown). */
  createdFor?: string;
}

/**
 * Writes what the controller sees to the cluster after each round: a LightNode per pod (created with the pod as its
 * owner, so it goes when the pod goes) and the LightNodePool's status: a change of state at once, the head, lag and
 * reference head at most every few seconds per object under a fleet-wide cap, a refresh every 30 s (writeThrottle). Writes are merge patches of the status subresource, sent with bounded concurrency and one
 * at a time per object (KeyedWrites), so a round's writes overlap on the wire while each object's stay in order.
 */
export class StatusWriter {
  private readonly api: CustomObjectsApi;
  /** Per pool (by its key), per pod: pruned when the pod leaves the pool, so pod churn does not grow it. */
  private readonly nodes = new Map<string, Map<string, NodeRecord>>();
  private readonly poolConditions = new Map<string, Condition[]>();
  /** Per pool: what its last status write said and when. */
  private readonly poolSent = new Map<string, SentStatus>();
  private readonly writes: KeyedWrites;
  private readonly clock: () => number;
  private readonly throttle: WriteThrottleOptions;
  /** Shared by every pool: the cap on writes is the fleet's. */
  private readonly budget: WriteBudget;
  private events = 0;

  constructor(
    kubeConfig: KubeConfig,
    private readonly options: {
      pools: () => ReadonlyMap<string, PoolRef>;
      fleet: Fleet & {
        podsWithoutGate(poolKey: string): string[];
        podUid(poolKey: string, pod: string): string | undefined;
      };
      logger: Logger;
      clock?: () => number;
      /** When statuses are written (see writeThrottle): changes at once, progress bounded, a refresh every 30 s. */
      throttle?: Partial<WriteThrottleOptions>;
      /** Events on transitions and restarts, and when the pool enters a systemic failure. */
      events?: EventRecorder;
      /** The autoscaler's last decision for a pool: desiredReplicas, the rate, the reason, ScalingActive. */
      scaling?: (poolKey: string) => PoolScalingStatus | undefined;
      /** Writes in flight at most, over all pools (default 8). */
      concurrency?: number;
    },
  ) {
    this.api = makeApiClient(kubeConfig, CustomObjectsApi);
    this.clock = options.clock ?? Date.now;
    this.throttle = { ...DEFAULT_WRITE_THROTTLE, ...options.throttle };
    this.budget = new WriteBudget(this.throttle);
    this.writes = new KeyedWrites(options.concurrency ?? 8, (key, error) =>
      options.logger.warn({ err: String(error), object: key }, "status write failed"),
    );
  }

  /**
   * The controller's onRound hook. Everything the round writes is queued before this returns its promise, which
   * resolves once those writes have settled; a caller that must not be held up by the API server need not wait for
   * it (runController does not), since later rounds' writes of an object queue behind earlier ones. Failures are
   * logged, never thrown: the next round writes again.
   */
  onRound(poolKey: string, output: EngineOutput): Promise<void> {
    const pools = this.options.pools();
    // Pools deleted while the controller runs are forgotten with their pods.
    for (const known of this.nodes.keys()) if (!pools.has(known)) this.forget(known);
    const pool = pools.get(poolKey);
    if (!pool) return Promise.resolve();
    const now = this.clock();
    const members = new Map(this.options.fleet.members(poolKey).map((m) => [m.name, m]));
    const records = this.recordsOf(poolKey);
    this.prune(pool, records, new Set([...members.keys(), ...output.nodes.map((n) => n.name)]));
    const round: Array<Promise<void>> = [];
    /** The objects with news, each with the write that carries it; which go out is decided over all of them. */
    const candidates: Array<WriteCandidate & { submit: () => void }> = [];
    for (const node of output.nodes) {
      const uid = this.options.fleet.podUid(poolKey, node.name) ?? "";
      // A pod not (or no longer) in the cache: a LightNode made now would have no owner and outlive it (even an
      // uninstall). Its own LightNode, if any, goes with it.
      if (uid === "") continue;
      let record = records.get(node.name);
      const news = nodeNews(node);
      // A new pod of the same name (a StatefulSet pod after an eviction) needs its LightNode at once: the old one
      // goes with the old pod.
      const newPod = record?.createdFor !== undefined && record.createdFor !== uid;
      const need = newPod ? "change" : writeNeed(record?.sent, news, now, this.throttle);
      if (!need) continue;
      if (!record) records.set(node.name, (record = {}));
      const target = record;
      const submit = () => {
        const status = lightNodeStatus(pool.network, node, members.get(node.name)?.restarts ?? [], now);
        // A node's first refresh comes up to one interval late, so the refreshes of many nodes spread over the
        // interval instead of all falling in one round.
        const spread = target.sent
          ? 0
          : refreshOffset(`${pool.namespace}/${node.name}`, this.throttle.refreshIntervalMs);
        const sent = sentNow(news, now, this.throttle, spread);
        target.sent = sent;
        round.push(
          this.writes.submit(nodeKey(pool, node.name), async () => {
            try {
              await this.ensureLightNode(pool, node.name, uid, target);
              await this.patchStatus(pool.namespace, NODE_PLURAL, node.name, status);
            } catch (error) {
              // Written again next round, unless a newer status was queued meanwhile. A LightNode gone under its
              // pod (garbage-collected with an earlier pod of the same name) is created again.
              if (target.sent === sent) target.sent = undefined;
              if (error instanceof ApiException && error.code === 404) target.createdFor = undefined;
              this.options.logger.warn(
                { err: String(error), node: node.name },
                "could not write LightNode status",
              );
            }
          }),
        );
      };
      candidates.push({ ...writeCandidate(need, record.sent, news), submit });
    }
    if (this.options.events) round.push(...this.submitEvents(pool, poolKey, output, this.options.events));
    const scaling = this.options.scaling?.(poolKey);
    const status = poolHealthStatus({
      generation: pool.generation,
      ...(pool.accepted ? { accepted: pool.accepted } : {}),
      ...(pool.refusal ? { refusal: pool.refusal } : {}),
      output,
      podsWithoutGate: this.options.fleet.podsWithoutGate(poolKey),
      previousConditions: this.poolConditions.get(poolKey) ?? [],
      now,
      ...(scaling ? { scaling } : {}),
    });
    // Kept at once, so the next round's transition times follow this one even while its write is under way.
    this.poolConditions.set(poolKey, status.conditions ?? []);
    const news = poolNews(status);
    const previous = this.poolSent.get(poolKey);
    const need = writeNeed(previous, news, now, this.throttle);
    if (need) {
      const submit = () => {
        const sent = sentNow(news, now, this.throttle);
        this.poolSent.set(poolKey, sent);
        round.push(
          this.writes.submit(`${pool.namespace}/lightnodepools/${pool.name}`, async () => {
            try {
              await this.patchStatus(pool.namespace, POOL_PLURAL, pool.name, status);
            } catch (error) {
              // Written again next round.
              if (this.poolSent.get(poolKey) === sent) this.poolSent.delete(poolKey);
              this.options.logger.warn(
                { err: String(error), pool: pool.name },
                "could not write LightNodePool status",
              );
            }
          }),
        );
      };
      candidates.push({ ...writeCandidate(need, previous, news), submit });
    }
    for (const picked of pickWrites(candidates, this.budget, now)) picked.submit();
    return Promise.all(round).then(() => undefined);
  }

  /**
   * Marks a pool the controller does not run (see rejectedPoolStatus). Its earlier conditions keep their transition
   * times; a failed write is logged and made again when the pools are next resolved.
   */
  rejectPool(
    pool: { namespace: string; name: string; generation: number; conditions?: readonly Condition[] },
    reason: string,
    message: string,
  ): Promise<void> {
    const status = rejectedPoolStatus({
      generation: pool.generation,
      reason,
      message: message.slice(0, 32_768),
      previousConditions: pool.conditions ?? [],
      now: this.clock(),
    });
    return this.writes.submit(`${pool.namespace}/lightnodepools/${pool.name}`, async () => {
      await this.patchStatus(pool.namespace, POOL_PLURAL, pool.name, status);
    });
  }

  /** Resolves once every write queued so far has settled (for a clean shutdown). */
  settled(): Promise<void> {
    return this.writes.idle();
  }

  /**
   * For a controller that stops leading: writes not yet sent are dropped (the new leader writes its own), and what was
   * written is forgotten, so a later term writes every status afresh from the cluster as it is then.
   */
  abandon(): void {
    this.writes.cancelAll();
    this.nodes.clear();
    this.poolConditions.clear();
    this.poolSent.clear();
  }

  /** Pods the writer remembers in a pool (by its key), for tests of pruning. */
  remembered(poolKey: string): string[] {
    return [...(this.nodes.get(poolKey)?.keys() ?? [])];
  }

  private submitEvents(
    pool: PoolRef,
    poolKey: string,
    output: EngineOutput,
    recorder: EventRecorder,
  ): Array<Promise<void>> {
    const pod = (name: string) => ({
      kind: "Pod" as const,
      apiVersion: "v1",
      namespace: pool.namespace,
      name,
      uid: this.options.fleet.podUid(poolKey, name),
    });
    const events = eventsOfRound(output.decisions, pod);
    const poolTarget = {
      kind: "LightNodePool" as const,
      apiVersion: API_VERSION,
      namespace: pool.namespace,
      name: pool.name,
      ...(pool.uid ? { uid: pool.uid } : {}),
    };
    // A pool's first round, before its peers answered, holds too: that is a start, not a failure worth a Warning.
    if (output.systemic && !output.systemic.pending)
      events.push({
        target: poolTarget,
        type: "Warning",
        reason: "SystemicFailure",
        action: "FailStatic",
        note: `${output.systemic.cause}: ${output.systemic.message}; no restarts, routing frozen`,
      });
    if (output.failStaticReleased)
      events.push({
        target: poolTarget,
        type: "Warning",
        reason: "FailStaticReleased",
        action: "FailStatic",
        note: `${output.failStaticReleased.cause}: ${output.failStaticReleased.message}; the hold ran out (failStaticMaxHold), nodes are judged on their own`,
      });
    // Each Event is a new object: its own key, so none replaces another.
    return events.map((event) => this.writes.submit(`event/${++this.events}`, () => recorder.record(event)));
  }

  private recordsOf(poolKey: string): Map<string, NodeRecord> {
    let records = this.nodes.get(poolKey);
    if (!records) this.nodes.set(poolKey, (records = new Map()));
    return records;
  }

  /** Forgets pods that left the pool (their LightNodes go with them) and drops their writes not yet sent. */
  private prune(pool: PoolRef, records: Map<string, NodeRecord>, present: ReadonlySet<string>): void {
    for (const name of records.keys()) {
      if (present.has(name)) continue;
      records.delete(name);
      this.writes.cancel(nodeKey(pool, name));
    }
  }

  private forget(poolKey: string): void {
    this.nodes.delete(poolKey);
    this.poolConditions.delete(poolKey);
    this.poolSent.delete(poolKey);
  }

  private async ensureLightNode(
    pool: PoolRef,
    podName: string,
    uid: string,
    record: NodeRecord,
  ): Promise<void> {
    if (record.createdFor === uid) return;
    try {
      await this.api.createNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        namespace: pool.namespace,
        plural: NODE_PLURAL,
        body: {
          apiVersion: API_VERSION,
          kind: "LightNode",
          metadata: {
            name: podName,
            namespace: pool.namespace,
            labels: { "lightfleet.io/network": pool.network, "lightfleet.io/pool": pool.name },
            ...(uid
              ? {
                  ownerReferences: [
                    { apiVersion: "v1", kind: "Pod", name: podName, uid, blockOwnerDeletion: false },
                  ],
                }
              : {}),
          },
          spec: { pool: pool.name, podName },
        },
      });
    } catch (error) {
      if (!(error instanceof ApiException && error.code === 409)) throw error;
    }
    record.createdFor = uid;
  }

  private async patchStatus(
    namespace: string,
    plural: typeof NODE_PLURAL | typeof POOL_PLURAL,
    name: string,
    status: LightNodeStatus | LightNodePoolStatus,
  ): Promise<void> {
    const body = statusMergePatch(plural === POOL_PLURAL ? "LightNodePool" : "LightNode", status);
    await this.api.patchNamespacedCustomObjectStatus(
      { group: GROUP, version: VERSION, namespace, plural, name, body },
      setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
    );
  }
}

function nodeKey(pool: PoolRef, name: string): string {
  return `${pool.namespace}/lightnodes/${name}`;
}

/** A stable offset in [0, intervalMs) from the object's key. */
function refreshOffset(key: string, intervalMs: number): number {
  // FNV-1a with a final mix, so similar names (light-0, light-1, ...) land far apart.
  let hash = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) hash = Math.imul(hash ^ key.charCodeAt(i), 0x01000193);
  hash = Math.imul(hash ^ (hash >>> 16), 0x45d9f3b);
  hash ^= hash >>> 16;
  return (hash >>> 0) % intervalMs;
}
