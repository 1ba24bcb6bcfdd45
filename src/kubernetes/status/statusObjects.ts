import type { PoolScalingStatus } from "../../scaling/poolScalingStatus.js";
import type { EngineOutput, NodeState, NodeStatus, RestartRecord } from "../../health/types.js";
import type { StatusNews } from "./writeThrottle.js";
import { NODE_STATES } from "../../health/types.js";
import type {
  Condition,
  LightNodePoolSpec,
  LightNodePoolStatus,
  LightNodeStatus,
  PoolConditionType,
} from "../api/crds.js";

/** Kubernetes times are RFC 3339 to the second. */
export const kubeTime = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");

/** A LightNode's status from the engine's view of the node and the fleet's restart history. */
export function lightNodeStatus(
  network: string,
  node: NodeStatus,
  restarts: readonly RestartRecord[],
  now: number,
): LightNodeStatus {
  const last = restarts.at(-1);
  return {
    network,
    state: node.state,
    ...(node.reason ? { reason: node.reason } : {}),
    message: node.message.slice(0, 1024),
    routed: node.routed,
    ...(node.head !== undefined ? { head: { number: node.head } } : {}),
    ...(node.lagBlocks !== undefined ? { lagBlocks: node.lagBlocks } : {}),
    ...(node.lagSeconds !== undefined ? { lagSeconds: Math.round(node.lagSeconds * 10) / 10 } : {}),
    restarts: restarts.length,
    ...(last ? { lastRestart: { time: kubeTime(last.at), reason: last.reason } } : {}),
    ...(restarts.length > 0
      ? { restartHistory: restarts.slice(-20).map((r) => ({ time: kubeTime(r.at), reason: r.reason })) }
      : {}),
    lastTransitionTime: kubeTime(node.since),
    lastProbeTime: kubeTime(now),
    // For `kubectl wait --for=condition=Ready lightnode/NAME`: routed or not, the state saying why.
    conditions: [
      {
        type: "Ready",
        status: node.routed ? "True" : "False",
        lastTransitionTime: kubeTime(node.since),
        reason: node.state,
        message: node.message.slice(0, 1024),
      },
    ],
  };
}

/** Optional LightNode status fields: a status that leaves one out must clear what an earlier write set. */
const NODE_OPTIONAL_FIELDS = [
  "reason",
  "head",
  "lagBlocks",
  "lagSeconds",
  "lastRestart",
  "restartHistory",
] as const;
/** Optional LightNodePool status fields (a refused pool's status has none of them). */
const POOL_OPTIONAL_FIELDS = [
  "referenceHead",
  "replicas",
  "healthyReplicas",
  "healthySummary",
  "nodesByState",
  "systemicCause",
  "desiredReplicas",
  "requestRate",
  "scalingReason",
  "scaleDownRecommendations",
] as const;

/**
 * The JSON merge patch body that makes an object's status read STATUS: a merge patch keeps every field it does not
 * name, so each optional field the new status leaves out is sent as null. Otherwise an Unresponsive node would keep
 * the head and lag of its last good probe, and a pool whose rate is unavailable its last rate.
 */
export function statusMergePatch(
  kind: "LightNode" | "LightNodePool",
  status: LightNodeStatus | LightNodePoolStatus,
): { status: Record<string, unknown> } {
  const patch: Record<string, unknown> = { ...status };
  for (const field of kind === "LightNode" ? NODE_OPTIONAL_FIELDS : POOL_OPTIONAL_FIELDS) {
    if (patch[field] === undefined) patch[field] = null;
  }
  return { status: patch };
}

/**
 * What of a node's status is news: its state and routing are written at once; its head and lag (progress, moving with
 * the blocks) are bounded by the write throttle. The lag in seconds and the probe time ride along.
 */
export function nodeNews(node: NodeStatus): StatusNews {
  return {
    change: `${node.state}/${node.routed}`,
    progress: `${node.head ?? "-"}/${node.lagBlocks ?? "-"}`,
    measure: node.lagBlocks ?? 0,
  };
}

/**
 * What of a pool's status is news. The generation, the counts, the desired size and the conditions' statuses and
 * reasons are written at once; the reference head is progress (bounded by the throttle, as the nodes' heads); the
 * rate, the texts quoting it and the scale-down window (its last entry dated every round) ride along with the next
 * write.
 */
export function poolNews(status: LightNodePoolStatus): StatusNews {
  const {
    referenceHead,
    requestRate: _rate,
    scalingReason: _why,
    scaleDownRecommendations: _window,
    conditions,
    ...rest
  } = status;
  return {
    change: JSON.stringify({ ...rest, conditions: conditions?.map((c) => [c.type, c.status, c.reason]) }),
    progress: String(referenceHead?.number ?? "-"),
    // The reference moving is the chain going on, as an in-sync node's head: no ranking before the nodes' heads.
    measure: 0,
  };
}

function condition(
  type: PoolConditionType,
  status: Condition["status"],
  reason: string,
  message: string,
  previous: readonly Condition[],
  generation: number,
  now: number,
): Condition {
  const before = previous.find((c) => c.type === type);
  return {
    type,
    status,
    observedGeneration: generation,
    // The transition time moves only when the status flips.
    lastTransitionTime: before && before.status === status ? before.lastTransitionTime : kubeTime(now),
    reason,
    message,
  };
}

/**
 * The status of a LightNodePool the controller refuses to run (an invalid spec with no accepted one to fall back on,
 * or a network another pool runs): not Ready, Degraded and its spec not accepted, each saying why, for the spec's
 * generation, so `kubectl get`, `describe` and `kubectl wait --for=condition=Ready=False` show it at once instead of a
 * pool that looks merely slow.
 */
export function rejectedPoolStatus(input: {
  generation: number;
  reason: string;
  message: string;
  previousConditions: readonly Condition[];
  now: number;
}): LightNodePoolStatus {
  const { generation, reason, message, previousConditions, now } = input;
  return {
    observedGeneration: generation,
    conditions: [
      condition("Ready", "False", reason, message, previousConditions, generation, now),
      condition("Degraded", "True", reason, message, previousConditions, generation, now),
      condition("SpecAccepted", "False", reason, message, previousConditions, generation, now),
    ],
  };
}

/** A LightNodePool's health status (the scaling fields are the autoscaler's, merged separately). */
export function poolHealthStatus(input: {
  generation: number;
  /** The spec the pool runs (kept in the status, see LightNodePoolStatus.acceptedSpec). */
  accepted?: { generation: number; spec: LightNodePoolSpec };
  /** Why the current generation's spec is refused while the accepted one runs. */
  refusal?: { reason: string; message: string };
  output: EngineOutput;
  podsWithoutGate: readonly string[];
  previousConditions: readonly Condition[];
  now: number;
  /** The autoscaler's last round of this pool, when it has one. */
  scaling?: PoolScalingStatus;
}): LightNodePoolStatus {
  const { output, generation, now, previousConditions: prev } = input;
  const byState: Partial<Record<NodeState, number>> = {};
  for (const state of NODE_STATES) byState[state] = 0;
  for (const node of output.nodes) byState[node.state] = (byState[node.state] ?? 0) + 1;
  const healthy = byState.Healthy ?? 0;
  const total = output.nodes.length;
  const conditions: Condition[] = [
    healthy > 0
      ? condition(
          "Ready",
          "True",
          "HealthyNodes",
          `${healthy} of ${total} nodes are healthy and routed`,
          prev,
          generation,
          now,
        )
      : condition(
          "Ready",
          "False",
          "NoHealthyNode",
          total === 0 ? "the pool has no nodes" : "no node is healthy: the gateway is in panic mode",
          prev,
          generation,
          now,
        ),
  ];
  if (input.podsWithoutGate.length > 0) {
    conditions.push(
      condition(
        "Degraded",
        "True",
        "ReadinessGateMissing",
        `pods without the readinessGate lightfleet.io/in-sync are left alone: ${input.podsWithoutGate.slice(0, 10).join(", ")}`,
        prev,
        generation,
        now,
      ),
    );
  } else if (output.systemic?.pending) {
    conditions.push(
      condition("Degraded", "Unknown", "PeersPending", output.systemic.message, prev, generation, now),
    );
  } else if (output.systemic) {
    conditions.push(
      condition(
        "Degraded",
        "True",
        "SystemicFailure",
        `${output.systemic.cause}: ${output.systemic.message}; no restarts, routing frozen`,
        prev,
        generation,
        now,
      ),
    );
  } else if (output.failStaticReleased) {
    conditions.push(
      condition(
        "Degraded",
        "True",
        "FailStaticReleased",
        `${output.failStaticReleased.cause}: ${output.failStaticReleased.message}; the hold ran out (failStaticMaxHold), nodes are judged on their own`,
        prev,
        generation,
        now,
      ),
    );
  } else if (healthy < total) {
    conditions.push(
      condition(
        "Degraded",
        "True",
        "NodesNotHealthy",
        `${total - healthy} of ${total} nodes are not healthy`,
        prev,
        generation,
        now,
      ),
    );
  } else {
    conditions.push(
      condition("Degraded", "False", "AllHealthy", "every node is healthy", prev, generation, now),
    );
  }
  const peerOutage = output.systemic ?? output.failStaticReleased;
  const noPeer = peerOutage?.cause === "no-peer-reachable";
  conditions.push(
    output.systemic?.pending
      ? condition("PeersReachable", "Unknown", "PeersPending", output.systemic.message, prev, generation, now)
      : noPeer
        ? condition("PeersReachable", "False", "NoPeerReachable", peerOutage!.message, prev, generation, now)
        : condition(
            "PeersReachable",
            "True",
            "PeersReachable",
            "the reserved peers answer",
            prev,
            generation,
            now,
          ),
  );
  // One list: a merge patch replaces status.conditions whole, so the scaling condition must travel with the rest.
  const { scaling } = input;
  if (scaling) {
    const c = scaling.condition;
    conditions.push(condition(c.type, c.status, c.reason, c.message, prev, generation, now));
  }
  const { accepted, refusal } = input;
  if (accepted) {
    conditions.push(
      refusal
        ? condition("SpecAccepted", "False", refusal.reason, refusal.message, prev, generation, now)
        : condition(
            "SpecAccepted",
            "True",
            "Accepted",
            `generation ${accepted.generation} is running`,
            prev,
            generation,
            now,
          ),
    );
  }
  return {
    observedGeneration: generation,
    conditions,
    // As JSON text: a merge patch would merge an object into the one written before, keeping fields since removed.
    ...(accepted
      ? { acceptedGeneration: accepted.generation, acceptedSpec: JSON.stringify(accepted.spec) }
      : {}),
    ...(scaling
      ? {
          desiredReplicas: scaling.desiredReplicas,
          ...(scaling.requestRate !== undefined ? { requestRate: scaling.requestRate } : {}),
          scalingReason: scaling.scalingReason.slice(0, 1024),
          ...(scaling.recommendations
            ? {
                scaleDownRecommendations: scaling.recommendations.slice(-32).map((r) => ({
                  time: kubeTime(r.at),
                  replicas: r.replicas,
                })),
              }
            : {}),
        }
      : {}),
    ...(output.reference
      ? {
          referenceHead: {
            number: output.reference.number,
            hash: output.reference.hash,
            time: kubeTime(output.reference.seenAt),
          },
        }
      : {}),
    replicas: total,
    healthyReplicas: healthy,
    healthySummary: `${healthy}/${total}`,
    nodesByState: byState,
    systemicCause: output.systemic?.cause ?? "",
  };
}
