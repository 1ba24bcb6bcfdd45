import { Counter, Histogram } from "prom-client";
import type { Registry } from "prom-client";
import { NETWORK_LABELS, type PoolLabels } from "./poolLabels.js";

export type ProbeTarget = "peer" | "node";
export type ProbeErrorReason =
  "timeout" | "connection" | "http-status" | "malformed" | "rpc-error" | "wrong-chain";

/** Probes say which pool (`network`: the controller's name for it), target and reason; the metrics label them. */
export interface ProbeMetrics {
  duration: { observe(labels: { network: string; target: ProbeTarget }, seconds: number): void };
  errors: { inc(labels: { network: string; target: ProbeTarget; reason: ProbeErrorReason }): void };
}

/**
 * Probe latency and failures. Labels stay bounded: the pool (see PoolLabels), peer-or-node, and a fixed set of
 * reasons.
 */
export function createProbeMetrics(registry: Registry, pools: PoolLabels = NETWORK_LABELS): ProbeMetrics {
  const duration = new Histogram({
    name: "lightfleet_probe_duration_seconds",
    help: "Time of one probe round trip to a light node or a reserved peer",
    labelNames: [...pools.names, "target"],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [registry],
  });
  const errors = new Counter({
    name: "lightfleet_probe_errors_total",
    help: "Probes that failed, by reason",
    labelNames: [...pools.names, "target", "reason"],
    registers: [registry],
  });
  return {
    duration: {
      observe: ({ network, target }, seconds) => duration.observe({ ...pools.of(network), target }, seconds),
    },
    errors: {
      inc: ({ network, target, reason }) => errors.inc({ ...pools.of(network), target, reason }),
    },
  };
}
