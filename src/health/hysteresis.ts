import type { ResolvedHealthConfig } from "../config/sections/network.js";
import { CATCHING_UP_KINDS, type NodeCondition } from "./nodeCondition.js";
import type { ConditionKind, NodeState } from "./types.js";

export interface Streaks {
  goodStreak: number;
  badStreak: number;
}

/**
 * Counts a probe into a streak: +1 when it counts, back to 0 when it does not. Saturates at the threshold, beyond
 * which the count makes no difference.
 */
export function countProbe(streak: number, counts: boolean, threshold: number): number {
  return counts ? Math.min(streak + 1, threshold) : 0;
}

/** The state a problem leads to once the hysteresis lets it through. */
export function stateForProblem(kind: ConditionKind): NodeState {
  if (kind === "unresponsive") return "Unresponsive";
  if (kind === "wrong-chain" || kind === "hash-mismatch") return "Diverged";
  return "Lagging";
}

export interface HysteresisInput {
  /** The state before this round (Restarting is resolved by the caller: in flight, or a fresh Starting). */
  previous: NodeState;
  streaks: Streaks;
  condition: NodeCondition;
  /** Within the startup grace and not yet caught up: catching-up problems keep the node Starting. */
  inStartupGrace: boolean;
  crashLoop: boolean;
}

/**
 * Leaving Healthy (or Starting) takes `unhealthyAfter` consecutive bad probes, reaching Healthy takes
 * `healthyAfter` consecutive good ones; between unhealthy states the node follows its problem at once (it is out of
 * routing already, so that cannot flap). A node on the edge therefore keeps whatever routing it had.
 */
export function nextState(input: HysteresisInput, health: ResolvedHealthConfig): NodeState {
  const { previous, streaks, condition } = input;
  if (condition.tier === "ok") {
    return previous === "Healthy" || streaks.goodStreak >= health.healthyAfter ? "Healthy" : previous;
  }
  if (input.crashLoop) return "CrashLoop";
  const confirmed = streaks.badStreak >= health.unhealthyAfter || condition.atOnce === true;
  if (previous === "Healthy") return confirmed ? stateForProblem(condition.kind) : "Healthy";
  if (previous === "Starting") {
    if (input.inStartupGrace && CATCHING_UP_KINDS.has(condition.kind)) return "Starting";
    return confirmed ? stateForProblem(condition.kind) : "Starting";
  }
  return stateForProblem(condition.kind);
}
