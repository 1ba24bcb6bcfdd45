import { Counter, Histogram } from "prom-client";
import type { Registry } from "prom-client";

export type ProbeTarget = "peer" | "node";
export type ProbeErrorReason =
  "timeout" | "connection" | "http-status" | "malformed" | "rpc-error" | "wrong-chain";

export interface ProbeMetrics {
  duration: Histogram<"network" | "target">;
  errors: Counter<"network" | "target" | "reason">;
}

/** Probe latency and failures. Labels stay bounded: network, peer-or-node, and a fixed set of reasons. */
export function createProbeMetrics(registry: Registry): ProbeMetrics {
  return {
    duration: new Histogram({
      name: "lightfleet_probe_duration_seconds",
      help: "Time of one probe round trip to a light node or a reserved peer",
      labelNames: ["network", "target"],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers: [registry],
    }),
    errors: new Counter({
      name: "lightfleet_probe_errors_total",
      help: "Probes that failed, by reason",
      labelNames: ["network", "target", "reason"],
      registers: [registry],
    }),
  };
}
