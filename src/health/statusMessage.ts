import type { NodeCondition } from "./nodeCondition.js";
import type { NodeObservation, NodeState } from "./types.js";

/** The human-readable status message: the state, why, and what holds it there (hysteresis, backoff, systemic). */
export function describeStatus(
  state: NodeState,
  obs: NodeObservation,
  streaks: { goodStreak: number; badStreak: number },
  condition: NodeCondition,
  systemic: string | undefined,
  held: string | undefined,
  unhealthyAfter: number,
  healthyAfter: number,
  /** A Starting node closing on the reference (replaying its chain). */
  closing = false,
): string {
  let text: string;
  if (state === "Restarting") {
    text = obs.restartInFlight ? "restart in progress" : `restart requested: ${condition.message}`;
  } else if (state === "CrashLoop") {
    text = `restarted too often, no automatic restart until healthy: ${condition.message}`;
  } else if (state === "Starting" && condition.kind === "awaiting") {
    text = "started, waiting for its first answer";
  } else if (condition.tier === "none") {
    text = condition.message;
  } else if (state === "Healthy") {
    text =
      condition.tier === "ok"
        ? condition.message
        : `${streaks.badStreak}/${unhealthyAfter} bad probes: ${condition.message}`;
  } else if (condition.tier === "ok") {
    const phase = state === "Starting" ? "starting" : "recovering";
    text = `${phase}, ${streaks.goodStreak}/${healthyAfter} good probes: ${condition.message}`;
  } else if (state === "Starting") {
    text = closing
      ? `catching up (closing on the reference): ${condition.message}`
      : `starting: ${condition.message}`;
  } else {
    text = condition.message;
  }
  if (held) text = `${text}; ${held}`;
  return systemic ? `systemic failure, state and routing kept (${systemic}); ${text}` : text;
}
