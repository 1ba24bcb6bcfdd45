import type { ScalingStatus } from "./scaler.js";

/**
 * What a scaling round contributes to a LightNodePool's status and Events, pure, for the Kubernetes backend to write:
 * `status.desiredReplicas`, `status.requestRate`, the `ScalingActive` condition (metav1.Condition fields) and an
 * Event when the size changed or a hold began.
 */

export type ScalingConditionReason =
  "Scaling" | "Disabled" | "OtherAutoscaler" | "SystemicFailure" | "RateUnavailable" | "ScaleFailed";

export interface ScalingActiveCondition {
  type: "ScalingActive";
  status: "True" | "False";
  reason: ScalingConditionReason;
  message: string;
}

/** The fields of LightNodePoolStatus (src/kubernetes/api/crds.ts) a scaling round sets, and its condition. */
export interface PoolScalingStatus {
  desiredReplicas: number;
  /** Requests per second, absent while unknown. */
  requestRate?: number;
  scalingReason: string;
  condition: ScalingActiveCondition;
  /** The scale-down window's recommendations (ms since the epoch), kept for the next leader. */
  recommendations?: ReadonlyArray<{ at: number; replicas: number }>;
}

export interface ScalingEvent {
  type: "Normal" | "Warning";
  /** Machine-readable, UpperCamelCase as Kubernetes Events expect. */
  reason: "ScaledUp" | "ScaledDown" | "ScalingHeld" | "ScaleFailed";
  note: string;
}

export function scalingConditionReason(status: ScalingStatus): ScalingConditionReason {
  if (status.disabled) return "Disabled";
  if (status.conflict !== undefined) return "OtherAutoscaler";
  if (status.scaleError !== undefined) return "ScaleFailed";
  if (status.held === "systemic-failure") return "SystemicFailure";
  if (status.held === "rate-unavailable") return "RateUnavailable";
  return "Scaling";
}

export function poolScalingStatus(status: ScalingStatus): PoolScalingStatus {
  const reason = scalingConditionReason(status);
  return {
    desiredReplicas: status.desired,
    ...(status.rate !== undefined ? { requestRate: Math.round(status.rate * 100) / 100 } : {}),
    scalingReason: status.reason,
    recommendations: status.memory.recommendations,
    condition: {
      type: "ScalingActive",
      status: reason === "Scaling" ? "True" : "False",
      reason,
      message: status.reason,
    },
  };
}

/** The Event a round deserves, if any: every applied size change, a failed one, and the start of a hold. */
export function scalingEvent(
  previous: ScalingStatus | undefined,
  current: ScalingStatus,
): ScalingEvent | undefined {
  if (current.applied) {
    return {
      type: "Normal",
      reason: current.replicas > current.current ? "ScaledUp" : "ScaledDown",
      note: `${current.current} -> ${current.replicas}: ${current.reason}`,
    };
  }
  const reason = scalingConditionReason(current);
  if (reason === "ScaleFailed") return { type: "Warning", reason: "ScaleFailed", note: current.reason };
  if (reason === "Scaling" || reason === "Disabled") return undefined;
  if (previous && scalingConditionReason(previous) === reason) return undefined;
  return { type: "Warning", reason: "ScalingHeld", note: current.reason };
}
