import type { ScalingConfig } from "../config/sections/scaling.js";
import type { SystemicCause } from "../health/types.js";
import { activeCronFloor, type ActiveFloor } from "./cronFloor.js";
import type { RateReading } from "./rateReading.js";

/**
 * The autoscaling algorithm, pure: (clock, rate, pool, config, memory) -> (replicas, reason, memory). It follows the
 * HPA's rules: desired = ceil(rate / target per node), a tolerance band, scale-up at once (by at most `scaleUpStep`
 * nodes a decision), scale-down to the highest recommendation of the stabilization window. On top: min/max and cron
 * floors, no scaling at all in a systemic failure, no scale-down without a rate, and no scale-down that could leave
 * fewer Starting or Healthy nodes than the rate needs.
 */

export type ScalingParams = Pick<
  ScalingConfig,
  | "minReplicas"
  | "maxReplicas"
  | "targetRequestsPerNode"
  | "tolerance"
  | "scaleDownStabilization"
  | "scaleUpStep"
  | "cronFloors"
>;

/** Past recommendations that can still be the highest of the window (a monotonic queue: bounded, oldest first). */
export interface ScalingMemory {
  readonly recommendations: ReadonlyArray<{ at: number; replicas: number }>;
}

export interface PoolServing {
  /** Nodes in the Starting state (syncing towards serving). */
  starting: number;
  /** Nodes in the Healthy state (routed). */
  healthy: number;
  /** Set while the health engine sees a systemic failure. */
  systemic?: { cause: SystemicCause; message: string };
}

export interface DecideScaleInput {
  now: number;
  params: ScalingParams;
  /** Replicas the pool has now (members of the process fleet, the workload's scale in Kubernetes). */
  current: number;
  rate: RateReading;
  pool: PoolServing;
  previous?: ScalingMemory;
}

export type ScaleChange = "up" | "down" | "hold";
export type HoldCause = "systemic-failure" | "rate-unavailable";

export interface ScaleDecision {
  /** Replicas to set now. */
  replicas: number;
  /** Where the pool is headed: `replicas`, or more while a scale-up is limited by the step. */
  desired: number;
  change: ScaleChange;
  /** The lowest size allowed now: minReplicas, or the cron floor in force. */
  floor: number;
  cronFloor?: ActiveFloor;
  /** Why scaling was held whatever the rate. */
  held?: HoldCause;
  /** Requests per second this decision used. */
  rate?: number;
  /** One line on why, for the pool status, Events and logs. */
  reason: string;
  memory: ScalingMemory;
}

export function decideScale(input: DecideScaleInput): ScaleDecision {
  const { now, params, current, rate, pool } = input;
  const cronFloor = activeCronFloor(params.cronFloors, now);
  const floor = Math.min(params.maxReplicas, Math.max(params.minReplicas, cronFloor?.minReplicas ?? 0));
  const floorText = cronFloor
    ? `cron floor "${cronFloor.name}" (at least ${cronFloor.minReplicas})`
    : `minReplicas ${params.minReplicas}`;
  const base = { floor, ...(cronFloor ? { cronFloor } : {}) };

  if (pool.systemic) {
    return {
      ...base,
      replicas: current,
      desired: current,
      change: "hold",
      held: "systemic-failure",
      ...(rate.ok ? { rate: rate.requestsPerSecond } : {}),
      reason: `systemic failure (${pool.systemic.cause}): scaling held at ${current}`,
      memory: remember(input.previous, now, current, params.scaleDownStabilization),
    };
  }

  if (!rate.ok) {
    const replicas = Math.max(current, floor);
    return {
      ...base,
      replicas,
      desired: replicas,
      change: replicas > current ? "up" : "hold",
      held: "rate-unavailable",
      reason:
        `request rate unavailable (${rate.reason}): no scale-down` +
        (replicas > current ? `; up to ${floorText}: ${current} -> ${replicas}` : `; holding ${current}`),
      // The held size counts as a recommendation, so a scale-down waits a whole window of good readings.
      memory: remember(input.previous, now, replicas, params.scaleDownStabilization),
    };
  }

  const rps = rate.requestsPerSecond;
  const target = params.targetRequestsPerNode;
  const needed = Math.ceil(rps / target);
  const perNode = `${formatRate(rps)} req/s needs ${needed} at ${target}/node`;
  const notes: string[] = [];

  let recommendation = needed;
  if (current > 0 && Math.abs(rps / (current * target) - 1) <= params.tolerance) {
    recommendation = current;
    notes.push(`within ${Math.round(params.tolerance * 100)}% of ${current}`);
  }
  if (recommendation < floor) {
    recommendation = floor;
    notes.push(`${floorText}`);
  }
  // A backend may remove serving nodes first: keep the nodes that do not serve on top of what the rate needs.
  const serving = pool.starting + pool.healthy;
  const servingBound = Math.min(current, needed + Math.max(0, current - serving));
  if (recommendation < servingBound) {
    recommendation = servingBound;
    notes.push(`${serving} of ${current} nodes serve, keeping ${servingBound}`);
  }
  if (recommendation > params.maxReplicas) {
    recommendation = params.maxReplicas;
    notes.push(`maxReplicas ${params.maxReplicas}`);
  }

  const memory = remember(input.previous, now, recommendation, params.scaleDownStabilization);
  const windowHighest = memory.recommendations[0]!.replicas;
  const because = `${perNode}${notes.length ? ` (${notes.join("; ")})` : ""}`;
  const decided = { ...base, rate: rps, memory };

  if (current > params.maxReplicas) {
    const replicas = params.maxReplicas;
    return {
      ...decided,
      replicas,
      desired: replicas,
      change: "down",
      reason: `${because}; above maxReplicas: ${current} -> ${replicas}`,
    };
  }
  if (recommendation > current) {
    const stepped = Math.max(Math.min(recommendation, current + params.scaleUpStep), floor);
    return {
      ...decided,
      replicas: stepped,
      desired: recommendation,
      change: "up",
      reason:
        `${because}; scaling up ${current} -> ${stepped}` +
        (stepped < recommendation
          ? ` (step limit ${params.scaleUpStep}, heading for ${recommendation})`
          : ""),
    };
  }
  if (windowHighest < current) {
    return {
      ...decided,
      replicas: windowHighest,
      desired: windowHighest,
      change: "down",
      reason:
        `${because}; scaling down ${current} -> ${windowHighest}` +
        (windowHighest > recommendation
          ? ` (highest recommendation of the last ${seconds(params.scaleDownStabilization)})`
          : ""),
    };
  }
  return {
    ...decided,
    replicas: current,
    desired: current,
    change: "hold",
    reason:
      recommendation < current
        ? `${because}; scale-down to ${recommendation} waits for the stabilization window ` +
          `(${windowHighest} recommended within the last ${seconds(params.scaleDownStabilization)})`
        : `${because}; holding ${current}`,
  };
}

/** Adds a recommendation and keeps only those that can still be the highest within the window. */
export function remember(
  previous: ScalingMemory | undefined,
  now: number,
  replicas: number,
  windowMs: number,
): ScalingMemory {
  const kept = (previous?.recommendations ?? []).filter((r) => r.at > now - windowMs && r.at <= now);
  while (kept.length > 0 && kept[kept.length - 1]!.replicas <= replicas) kept.pop();
  kept.push({ at: now, replicas });
  return { recommendations: kept };
}

function formatRate(rps: number): string {
  return rps >= 100 ? rps.toFixed(0) : rps.toFixed(1);
}

function seconds(ms: number): string {
  return `${Math.round(ms / 1000)} s`;
}
