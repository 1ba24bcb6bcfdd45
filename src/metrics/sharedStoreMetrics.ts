import { Counter, Gauge, Histogram } from "prom-client";
import type { Registry } from "prom-client";

/** The gateway's calls to its shared store (Redis), as metric labels: a fixed set. */
export type SharedStoreOperation = "rate_limit" | "transaction_limit" | "lease" | "filter" | "head" | "cache";

export interface SharedStoreMetrics {
  duration: Histogram<"operation">;
  errors: Counter<"operation">;
  /** Subscriber connections found stalled (a PING unanswered) and replaced. */
  subscriberStalls: Counter;
  /** 1 while connected; read at each scrape from `connected`. */
  up: Gauge;
}

/** Metrics of the gateway's shared store (`gateway.sharedState` redis): round-trip time, failures, connection. */
export function createSharedStoreMetrics(
  registry: Registry,
  connected: () => boolean = () => false,
): SharedStoreMetrics {
  const registers = [registry];
  return {
    duration: new Histogram({
      name: "lightfleet_gateway_shared_store_duration_seconds",
      help: "Round-trip time of the gateway's commands to its shared store (Redis), by operation",
      labelNames: ["operation"],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
      registers,
    }),
    errors: new Counter({
      name: "lightfleet_gateway_shared_store_errors_total",
      help: "Commands to the gateway's shared store (Redis) that failed or timed out, by operation",
      labelNames: ["operation"],
      registers,
    }),
    subscriberStalls: new Counter({
      name: "lightfleet_gateway_shared_store_subscriber_stale_total",
      help: "Times the gateway's pub/sub connection to its shared store (Redis) stopped answering PING without closing, and was replaced",
      registers,
    }),
    up: new Gauge({
      name: "lightfleet_gateway_shared_store_up",
      help: "1 while the gateway is connected to its shared store (Redis)",
      registers,
      collect() {
        this.set(connected() ? 1 : 0);
      },
    }),
  };
}
