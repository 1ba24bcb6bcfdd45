import type { ResolvedHealthConfig } from "../config/sections/network.js";
import type { RestartReason, RestartRecord } from "./types.js";

export interface RestartCandidate {
  name: string;
  reason: RestartReason;
  /** Since when the node has been in the restart tier (the oldest goes first). */
  dueSince: number;
  restarts: ReadonlyArray<RestartRecord>;
  /** Restarts up to this time are forgiven: the node was Healthy after them. */
  crashLoopClearedAt?: number;
}

export interface RestartPlan {
  restart: Array<{ name: string; reason: RestartReason }>;
  /** Restarted too often: CrashLoop, no automatic restart until Healthy again. */
  crashLoop: string[];
  /** Due but held back, with why (backoff, or no free restart slot). */
  held: Map<string, string>;
}

/** Restarts of the crash-loop window that still count (after the node was last Healthy out of a crash loop). */
export function recentRestarts(
  restarts: ReadonlyArray<RestartRecord>,
  now: number,
  window: number,
  clearedAt: number | undefined,
): { count: number; last: number | undefined } {
  let count = 0;
  let last: number | undefined;
  const from = Math.max(now - window, clearedAt ?? -Infinity);
  for (const r of restarts) {
    if (r.at <= from) continue;
    count++;
    if (last === undefined || r.at > last) last = r.at;
  }
  return { count, last };
}

/** Per-node exponential backoff: none before the first restart, then base, 2 x base, ... up to max. */
export function backoffMs(
  recentCount: number,
  health: Pick<ResolvedHealthConfig, "restartBackoffBase" | "restartBackoffMax">,
): number {
  if (recentCount === 0) return 0;
  return Math.min(health.restartBackoffMax, health.restartBackoffBase * 2 ** (recentCount - 1));
}

/**
 * Chooses which due nodes to restart now: crash-looping nodes are never restarted, a node in backoff waits, and at
 * most `maxConcurrentRestarts` restarts run at once, counting those already in flight.
 */
export function planRestarts(
  candidates: ReadonlyArray<RestartCandidate>,
  inFlight: number,
  health: ResolvedHealthConfig,
  now: number,
): RestartPlan {
  const plan: RestartPlan = { restart: [], crashLoop: [], held: new Map() };
  let slots = health.maxConcurrentRestarts - inFlight;
  const ordered = [...candidates].sort((a, b) => a.dueSince - b.dueSince || (a.name < b.name ? -1 : 1));
  for (const c of ordered) {
    const recent = recentRestarts(c.restarts, now, health.crashLoopWindow, c.crashLoopClearedAt);
    if (recent.count >= health.crashLoopAfter) {
      plan.crashLoop.push(c.name);
      continue;
    }
    const wait = backoffMs(recent.count, health);
    if (recent.last !== undefined && now < recent.last + wait) {
      const left = Math.ceil((recent.last + wait - now) / 1000);
      plan.held.set(
        c.name,
        `restart (${c.reason}) in backoff for ${left} s more after ${recent.count} recent restart(s)`,
      );
      continue;
    }
    if (slots <= 0) {
      plan.held.set(
        c.name,
        `restart (${c.reason}) waits for a free slot (${health.maxConcurrentRestarts} at a time)`,
      );
      continue;
    }
    slots--;
    plan.restart.push({ name: c.name, reason: c.reason });
  }
  return plan;
}
