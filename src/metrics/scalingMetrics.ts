import { Counter, Gauge } from "prom-client";
import type { Registry } from "prom-client";
import { NETWORK_LABELS, type PoolLabels } from "./poolLabels.js";

export const SCALING_HOLD_CAUSES = ["systemic-failure", "rate-unavailable", "conflict"] as const;
export type ScalingHoldCause = (typeof SCALING_HOLD_CAUSES)[number];

export interface ScalingObservation {
  /** Requests per second, or undefined when the source could not say (the series is then removed, not stale). */
  rate?: number;
  desired: number;
  floor: number;
  held?: ScalingHoldCause;
}

export interface ScalingMetrics {
  requestRate: Gauge;
  desiredReplicas: Gauge;
  minReplicas: Gauge;
  held: Gauge;
  sourceErrors: Counter;
  scaleEvents: Counter;
  observe(network: string, observation: ScalingObservation): void;
  recordSourceError(network: string, source: string): void;
  recordScale(network: string, direction: "up" | "down"): void;
  forgetNetwork(network: string): void;
}

/**
 * The autoscaler's metrics. `lightfleet_pool_request_rate` and `lightfleet_pool_desired_replicas` are DESIGN.md's
 * contract; a KEDA ScaledObject or an HPA on external metrics can scale on them instead of the controller. `pools`
 * turns the autoscaler's pool name into labels (see PoolLabels).
 */
export function createScalingMetrics(registry: Registry, pools: PoolLabels = NETWORK_LABELS): ScalingMetrics {
  const registers = [registry];
  const pool = pools.names;
  const requestRate = new Gauge({
    name: "lightfleet_pool_request_rate",
    help: "Requests per second the pool's gateway serves, as the autoscaler last read it (absent while unknown)",
    labelNames: [...pool],
    registers,
  });
  const desiredReplicas = new Gauge({
    name: "lightfleet_pool_desired_replicas",
    help: "Replicas the autoscaler wants for the pool (stabilized, within min/max and cron floors)",
    labelNames: [...pool],
    registers,
  });
  const minReplicas = new Gauge({
    name: "lightfleet_pool_min_replicas",
    help: "The pool's lowest allowed size now: minReplicas, or the cron floor in force",
    labelNames: [...pool],
    registers,
  });
  const held = new Gauge({
    name: "lightfleet_pool_scaling_held",
    help: "1 while the autoscaler holds the pool's size for this cause, else 0",
    labelNames: [...pool, "cause"],
    registers,
  });
  const sourceErrors = new Counter({
    name: "lightfleet_scaling_source_errors_total",
    help: "Reads of the request rate that failed, by source",
    labelNames: [...pool, "source"],
    registers,
  });
  const scaleEvents = new Counter({
    name: "lightfleet_pool_scale_events_total",
    help: "Size changes the autoscaler asked of the fleet, by direction",
    labelNames: [...pool, "direction"],
    registers,
  });

  /** Per network, the sources that have failed (to remove their series with the network). */
  const started = new Map<string, Set<string>>();
  function start(network: string): Set<string> {
    let sources = started.get(network);
    if (sources) return sources;
    started.set(network, (sources = new Set()));
    // Counters start at 0 so that increase() sees the first event.
    scaleEvents.inc({ ...pools.of(network), direction: "up" }, 0);
    scaleEvents.inc({ ...pools.of(network), direction: "down" }, 0);
    return sources;
  }

  return {
    requestRate,
    desiredReplicas,
    minReplicas,
    held,
    sourceErrors,
    scaleEvents,
    observe(network, observation) {
      start(network);
      if (observation.rate === undefined) requestRate.remove(pools.of(network));
      else requestRate.set(pools.of(network), observation.rate);
      desiredReplicas.set(pools.of(network), observation.desired);
      minReplicas.set(pools.of(network), observation.floor);
      for (const cause of SCALING_HOLD_CAUSES)
        held.set({ ...pools.of(network), cause }, observation.held === cause ? 1 : 0);
    },
    recordSourceError(network, source) {
      start(network).add(source);
      sourceErrors.inc({ ...pools.of(network), source });
    },
    recordScale(network, direction) {
      start(network);
      scaleEvents.inc({ ...pools.of(network), direction });
    },
    forgetNetwork(network) {
      for (const source of started.get(network) ?? []) sourceErrors.remove({ ...pools.of(network), source });
      started.delete(network);
      requestRate.remove(pools.of(network));
      desiredReplicas.remove(pools.of(network));
      minReplicas.remove(pools.of(network));
      for (const cause of SCALING_HOLD_CAUSES) held.remove({ ...pools.of(network), cause });
      scaleEvents.remove({ ...pools.of(network), direction: "up" });
      scaleEvents.remove({ ...pools.of(network), direction: "down" });
    },
  };
}
