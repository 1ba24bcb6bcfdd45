import { ApiException, CustomObjectsApi, PatchStrategy, setHeaderOptions } from "@kubernetes/client-node";
import type { KubeConfig } from "@kubernetes/client-node";
import type { EngineOutput, NodeState } from "../../health/types.js";
import type { Logger } from "../../log/logger.js";
import type { PoolScalingStatus } from "../../scaling/poolScalingStatus.js";
import type { Fleet } from "../fleet.js";
import { API_VERSION, GROUP, NODE_PLURAL, POOL_PLURAL, VERSION } from "./crds.js";
import type { Condition } from "./crds.js";
import type { EventRecorder } from "./eventRecorder.js";
import { eventsOfRound } from "./eventRecorder.js";
import { lightNodeStatus, poolHealthStatus, statusDue } from "./statusObjects.js";

export interface PoolRef {
  network: string;
  namespace: string;
  /** LightNodePool name. */
  name: string;
  generation: number;
}

/**
 * Writes what the controller sees to the cluster after each round: a LightNode per pod (created with the pod as its
 * owner, so it goes when the pod goes; status written on a state change and at most every 30 s otherwise) and the
 * LightNodePool's status. Writes are merge patches of the status subresource.
 */
export class StatusWriter {
  private readonly api: CustomObjectsApi;
  private readonly written = new Map<string, { state: NodeState; routed: boolean; writtenAt: number }>();
  private readonly existing = new Set<string>();
  private readonly poolConditions = new Map<string, Condition[]>();
  private readonly clock: () => number;

  constructor(
    kubeConfig: KubeConfig,
    private readonly options: {
      pools: () => ReadonlyMap<string, PoolRef>;
      fleet: Fleet & {
        podsWithoutGate(network: string): string[];
        podUid(network: string, pod: string): string | undefined;
      };
      logger: Logger;
      clock?: () => number;
      minIntervalMs?: number;
      /** Events on transitions and restarts, and when the pool enters a systemic failure. */
      events?: EventRecorder;
      /** The autoscaler's last decision for a pool: desiredReplicas, the rate, the reason, ScalingActive. */
      scaling?: (network: string) => PoolScalingStatus | undefined;
    },
  ) {
    this.api = kubeConfig.makeApiClient(CustomObjectsApi);
    this.clock = options.clock ?? Date.now;
  }

  /** The controller's onRound hook. Failures are logged, never thrown: the next round writes again. */
  async onRound(network: string, output: EngineOutput): Promise<void> {
    const pool = this.options.pools().get(network);
    if (!pool) return;
    const now = this.clock();
    const members = new Map(this.options.fleet.members(network).map((m) => [m.name, m]));
    for (const node of output.nodes) {
      const key = `${pool.namespace}/${node.name}`;
      if (!statusDue(this.written.get(key), node, now, this.options.minIntervalMs)) continue;
      const status = lightNodeStatus(network, node, members.get(node.name)?.restarts ?? [], now);
      try {
        await this.ensureLightNode(pool, node.name);
        await this.patchStatus(pool.namespace, NODE_PLURAL, node.name, status);
        // A node's first write is dated up to one interval later, so 30 s refreshes of many nodes spread over the
        // interval instead of all falling in one round; writes stay at most one per interval per node.
        const first = !this.written.has(key);
        const spread = first ? refreshOffset(key, this.options.minIntervalMs ?? 30_000) : 0;
        this.written.set(key, { state: node.state, routed: node.routed, writtenAt: now + spread });
      } catch (error) {
        this.options.logger.warn({ err: String(error), node: node.name }, "could not write LightNode status");
      }
    }
    if (this.options.events) {
      const pod = (name: string) => ({
        kind: "Pod" as const,
        apiVersion: "v1",
        namespace: pool.namespace,
        name,
        uid: this.options.fleet.podUid(network, name),
      });
      const events = eventsOfRound(output.decisions, pod);
      if (output.systemic)
        events.push({
          target: {
            kind: "LightNodePool",
            apiVersion: API_VERSION,
            namespace: pool.namespace,
            name: pool.name,
          },
          type: "Warning",
          reason: "SystemicFailure",
          action: "FailStatic",
          note: `${output.systemic.cause}: ${output.systemic.message}; no restarts, routing frozen`,
        });
      for (const event of events) await this.options.events.record(event);
    }
    const status = poolHealthStatus({
      generation: pool.generation,
      output,
      podsWithoutGate: this.options.fleet.podsWithoutGate(network),
      previousConditions: this.poolConditions.get(network) ?? [],
      now,
      ...(this.options.scaling?.(network) ? { scaling: this.options.scaling(network)! } : {}),
    });
    try {
      await this.patchStatus(pool.namespace, POOL_PLURAL, pool.name, status);
      this.poolConditions.set(network, status.conditions ?? []);
    } catch (error) {
      this.options.logger.warn(
        { err: String(error), pool: pool.name },
        "could not write LightNodePool status",
      );
    }
  }

  private async ensureLightNode(pool: PoolRef, podName: string): Promise<void> {
    const key = `${pool.namespace}/${podName}`;
    if (this.existing.has(key)) return;
    const uid = this.options.fleet.podUid(pool.network, podName);
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
    this.existing.add(key);
  }

  private async patchStatus(namespace: string, plural: string, name: string, status: object): Promise<void> {
    await this.api.patchNamespacedCustomObjectStatus(
      { group: GROUP, version: VERSION, namespace, plural, name, body: { status } },
      setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
    );
  }
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
