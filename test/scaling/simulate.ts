import { scalingSchema, type ScalingConfig } from "../../src/config/sections/scaling.js";
import {
  decideScale,
  type PoolServing,
  type ScaleDecision,
  type ScalingMemory,
} from "../../src/scaling/decideScale.js";
import { rateFailed, rateOf, type RateReading } from "../../src/scaling/rateReading.js";

export const MINUTE = 60_000;

/** Scaling parameters as the config loader resolves them, with overrides. */
export function params(overrides: Record<string, unknown> = {}): ScalingConfig {
  return scalingSchema.parse(overrides);
}

export interface Step {
  at: number;
  rate?: number;
  decision: ScaleDecision;
}

export interface SimulateOptions {
  params: ScalingConfig;
  start: number;
  durationMs: number;
  /** Rounds every this many ms (the controller's probe interval). */
  everyMs?: number;
  initial: number;
  /** Requests per second at a time, or undefined while the source fails. */
  load: (t: number) => number | undefined;
  /** Serving nodes and systemic state; by default every replica is Healthy. */
  pool?: (t: number, replicas: number) => PoolServing;
}

/** Runs the algorithm round after round, the fleet obeying every decision at once. */
export function simulate(options: SimulateOptions): Step[] {
  const steps: Step[] = [];
  let memory: ScalingMemory | undefined;
  let current = options.initial;
  for (let t = options.start; t <= options.start + options.durationMs; t += options.everyMs ?? 15_000) {
    const rps = options.load(t);
    const rate: RateReading = rps === undefined ? rateFailed("connection refused") : rateOf(rps);
    const pool = options.pool?.(t, current) ?? { starting: 0, healthy: current };
    const decision = decideScale({ now: t, params: options.params, current, rate, pool, previous: memory });
    memory = decision.memory;
    current = decision.replicas;
    steps.push({ at: t, ...(rps === undefined ? {} : { rate: rps }), decision });
  }
  return steps;
}

export function replicasOf(steps: Step[]): number[] {
  return steps.map((s) => s.decision.replicas);
}

/** Number of times the direction of change reversed (up then down, or down then up). */
export function reversals(steps: Step[]): number {
  let last: "up" | "down" | undefined;
  let count = 0;
  for (const { decision } of steps) {
    if (decision.change === "hold") continue;
    if (last && decision.change !== last) count++;
    last = decision.change;
  }
  return count;
}
