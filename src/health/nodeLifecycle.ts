import type { NodeMemory } from "./engineMemory.js";
import type { NodeObservation } from "./types.js";

/** A node seen for the first time (or after a controller restart): trust the fleet's routing as the starting point. */
export function coldStart(obs: NodeObservation, now: number, healthyAfter: number): NodeMemory {
  const routed = obs.routed === true;
  return {
    state: routed ? "Healthy" : "Starting",
    since: now,
    startedAt: obs.startedAt,
    caughtUp: routed,
    goodStreak: routed ? healthyAfter : 0,
    badStreak: 0,
    routed,
    stallClockFrom: now,
    crashLoop: false,
  };
}

/** A new incarnation (the node was restarted) starts over, but keeps its crash-loop standing and routing. */
export function newIncarnation(previous: NodeMemory, obs: NodeObservation, now: number): NodeMemory {
  return {
    state: "Starting",
    since: now,
    startedAt: obs.startedAt,
    caughtUp: false,
    goodStreak: 0,
    badStreak: 0,
    routed: previous.routed,
    stallClockFrom: now,
    crashLoop: previous.crashLoop,
    crashLoopClearedAt: previous.crashLoopClearedAt,
  };
}

/** A restart the engine asked for counts as in flight until the backend shows it, or it is retried after a while. */
export function pendingRestart(
  issuedAt: number | undefined,
  obs: NodeObservation,
  now: number,
  retryAfter: number,
): number | undefined {
  if (issuedAt === undefined) return undefined;
  if (obs.restartInFlight || obs.startedAt >= issuedAt || now - issuedAt >= retryAfter) return undefined;
  for (const r of obs.restarts) if (r.at >= issuedAt) return undefined;
  return issuedAt;
}
