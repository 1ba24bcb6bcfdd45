import { Counter, Gauge } from "prom-client";
import type { Registry } from "prom-client";

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
  requestRate: Gauge<"network">;
  desiredReplicas: Gauge<"network">;
  minReplicas: Gauge<"network">;
  held: Gauge<"network" | "cause">;
  sourceErrors: Counter<"network" | "source">;
  scaleEvents: Counter<"network" | "direction">;
  observe(network: string, observation: ScalingObservation): void;
  recordSourceError(network: string, source: string): void;
  recordScale(network: string, direction: "up" | "down"): void;
  forgetNetwork(network: string): void;
}

/**
 * The autoscaler's metrics. `lightfleet_pool_request_rate` and `lightfleet_pool_desired_replicas` are DESIGN.md's
 * contract; a KEDA ScaledObject or an HPA on external metrics can scale on them instead of the controller.
 */
export function createScalingMetrics(registry: Registry): ScalingMetrics {
  const registers = [registry];
  const requestRate = new Gauge({
    name: "lightfleet_pool_request_rate",
    help: "Requests per second the pool's gateway serves, as the autoscaler last read it (absent while unknown)",
    labelNames: ["network"],
    registers,
  });
  const desiredReplicas = new Gauge({
    name: "lightfleet_pool_desired_replicas",
    help: "Replicas the autoscaler wants for the pool (stabilized, within min/max and cron floors)",
    labelNames: ["network"],
    registers,
  });
  const minReplicas = new Gauge({
    name: "lightfleet_pool_min_replicas",
    help: "The pool's lowest allowed size now: minReplicas, or the cron floor in force",
    labelNames: ["network"],
    registers,
  });
  const held = new Gauge({
    name: "lightfleet_pool_scaling_held",
    help: "1 while the autoscaler holds the pool's size for this cause, else 0",
    labelNames: ["network", "cause"],
    registers,
  });
  const sourceErrors = new Counter({
    name: "lightfleet_scaling_source_errors_total",
    help: "Reads of the request rate that failed, by source",
    labelNames: ["network", "source"],
    registers,
  });
  const scaleEvents = new Counter({
    name: "lightfleet_pool_scale_events_total",
    help: "Size changes the autoscaler asked of the fleet, by direction",
    labelNames: ["network", "direction"],
    registers,
  });

  /** Per network, the sources that have failed (to remove their series with the network). */
  const started = new Map<string, Set<string>>();
  function start(network: string): Set<string> {
    let sources = started.get(network);
    if (sources) return sources;
    started.set(network, (sources = new Set()));
    // Counters start at 0 so that increase() sees the first event.
    scaleEvents.inc({ network, direction: "up" }, 0);
    scaleEvents.inc({ network, direction: "down" }, 0);
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
      if (observation.rate === undefined) requestRate.remove({ network });
      else requestRate.set({ network }, observation.rate);
      desiredReplicas.set({ network }, observation.desired);
      minReplicas.set({ network }, observation.floor);
      for (const cause of SCALING_HOLD_CAUSES)
        held.set({ network, cause }, observation.held === cause ? 1 : 0);
    },
    recordSourceError(network, source) {
      start(network).add(source);
      sourceErrors.inc({ network, source });
    },
    recordScale(network, direction) {
      start(network);
      scaleEvents.inc({ network, direction });
    },
    forgetNetwork(network) {
      for (const source of started.get(network) ?? []) sourceErrors.remove({ network, source });
      started.delete(network);
      requestRate.remove({ network });
      desiredReplicas.remove({ network });
      minReplicas.remove({ network });
      for (const cause of SCALING_HOLD_CAUSES) held.remove({ network, cause });
      scaleEvents.remove({ network, direction: "up" });
      scaleEvents.remove({ network, direction: "down" });
    },
  };
}
