import { Counter, Gauge } from "prom-client";
import type { Registry } from "prom-client";
import type { CountCell } from "./pendingCounts.js";
import { PendingCounts } from "./pendingCounts.js";
import { PendingHistogram } from "./pendingHistogram.js";

/** How a call ended; "ok" is success (the alerts count everything else as errors). */
export const GATEWAY_OUTCOMES = [
  "ok",
  "rpc_error",
  "refused",
  "invalid",
  "rate_limited",
  "upstream_error",
  "timeout",
  "unavailable",
] as const;
export type GatewayOutcome = (typeof GATEWAY_OUTCOMES)[number];

export interface GatewayMetrics {
  requests: Counter<"network" | "method" | "outcome">;
  /** Hot-path counts of `requests`, added to it at each scrape. */
  pendingRequests: PendingCounts<"network" | "method" | "outcome">;
  /** Observed through cells on the hot path (see PendingHistogram). */
  duration: PendingHistogram<"network" | "method">;
  upstreamRequests: Counter<"network" | "upstream" | "outcome">;
  /** Hot-path counts of `upstreamRequests`, added to it at each scrape. */
  pendingUpstreamRequests: PendingCounts<"network" | "upstream" | "outcome">;
  /**
   * Reads sent again: `failed` (the only attempt failed), `slow` (past the hung bound, from the budget), `stuck`
   * (every node it waits on hung, or twice the bound waited: owed to the budget).
   */
  retries: Counter<"network" | "reason">;
  /** Calls the response cache could answer: hit or miss. */
  cacheRequests: Counter<"network" | "result">;
  /** Hot-path counts of `cacheRequests`, added to it at each scrape. */
  pendingCacheRequests: PendingCounts<"network" | "result">;
  cacheBytes: Gauge<"network">;
  /** How `cacheBytes` of a network is read at each scrape. */
  countCacheBytes(network: string, count: () => number): void;
  /** Hedged reads: sent, won (the hedge answered first), budget_refused. */
  hedges: Counter<"network" | "outcome">;
  upstreamInFlight: Gauge<"network">;
  /** The value of `upstreamInFlight` per network, read at each scrape. */
  inFlightOf(network: string): CountCell;
  upstreamCallSockets: Gauge<"network">;
  /** How `upstreamCallSockets` of a network is counted at each scrape. */
  countCallSockets(network: string, count: () => number): void;
  getLogsRefused: Counter<"network" | "reason">;
  panicMode: Gauge<"network">;
  servedHead: Gauge<"network">;
  wsConnections: Gauge<"network">;
  wsSubscriptions: Gauge<"network" | "type">;
  wsDisconnects: Counter<"network" | "reason">;
}

/**
 * The gateway's metrics. Label values are bounded: configured networks, upstream names from the fleet, a fixed set of
 * method names ("other" for the rest) and the outcomes above.
 */
export function createGatewayMetrics(registry: Registry): GatewayMetrics {
  const registers = [registry];
  const pendingRequests = new PendingCounts<"network" | "method" | "outcome">();
  const pendingUpstreamRequests = new PendingCounts<"network" | "upstream" | "outcome">();
  const inFlight = new Map<string, CountCell>();
  const callSockets = new Map<string, () => number>();
  const cacheBytes = new Map<string, () => number>();
  const pendingCacheRequests = new PendingCounts<"network" | "result">();
  return {
    pendingRequests,
    pendingCacheRequests,
    pendingUpstreamRequests,
    inFlightOf(network) {
      let cell = inFlight.get(network);
      if (!cell) {
        cell = { n: 0 };
        inFlight.set(network, cell);
      }
      return cell;
    },
    requests: new Counter({
      name: "lightfleet_gateway_requests_total",
      help: "JSON-RPC calls answered by the gateway (each batch item counts), by outcome.",
      labelNames: ["network", "method", "outcome"],
      registers,
      collect() {
        pendingRequests.flushInto(this);
      },
    }),
    duration: new PendingHistogram({
      name: "lightfleet_gateway_request_duration_seconds",
      help: "Time to answer one JSON-RPC call.",
      labelNames: ["network", "method"],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    }),
    upstreamRequests: new Counter({
      name: "lightfleet_gateway_upstream_requests_total",
      help: "Calls sent to light nodes, by outcome (ok, rpc_error, connection, timeout, malformed, http-status).",
      labelNames: ["network", "upstream", "outcome"],
      registers,
      collect() {
        pendingUpstreamRequests.flushInto(this);
      },
    }),
    upstreamInFlight: new Gauge({
      name: "lightfleet_gateway_upstream_in_flight",
      help: "Calls sent to light nodes and not yet answered.",
      labelNames: ["network"],
      registers,
      collect() {
        for (const [network, cell] of inFlight) this.set({ network }, cell.n);
      },
    }),
    countCallSockets(network, count) {
      callSockets.set(network, count);
    },
    upstreamCallSockets: new Gauge({
      name: "lightfleet_gateway_upstream_call_sockets",
      help: "Light nodes whose calls go over an open WebSocket (per gateway process); the others are called over HTTP.",
      labelNames: ["network"],
      registers,
      collect() {
        for (const [network, count] of callSockets) this.set({ network }, count());
      },
    }),
    retries: new Counter({
      name: "lightfleet_gateway_retries_total",
      help: "Idempotent reads sent again to another node: after a connection failure (reason failed), past their node's hung bound while it still answers other calls (slow, from the hedge budget), or while every node they wait on is hung or after twice the bound (stuck, owed to the budget).",
      labelNames: ["network", "reason"],
      registers,
    }),
    cacheRequests: new Counter({
      name: "lightfleet_gateway_cache_requests_total",
      help: "Calls whose answer cannot change (by block hash, at or below the finalized block), by result: hit (answered from the cache), shared_hit (from the replicas' shared tier in Redis) or miss.",
      labelNames: ["network", "result"],
      registers,
      collect() {
        pendingCacheRequests.flushInto(this);
      },
    }),
    countCacheBytes(network, count) {
      cacheBytes.set(network, count);
    },
    cacheBytes: new Gauge({
      name: "lightfleet_gateway_cache_bytes",
      help: "Bytes of answers held by the response cache (per gateway process).",
      labelNames: ["network"],
      registers,
      collect() {
        for (const [network, count] of cacheBytes) this.set({ network }, count());
      },
    }),
    hedges: new Counter({
      name: "lightfleet_gateway_hedges_total",
      help: "Hedged reads: sent to a second node (sent), answered there first (won), not sent for want of budget (budget_refused).",
      labelNames: ["network", "outcome"],
      registers,
    }),
    getLogsRefused: new Counter({
      name: "lightfleet_gateway_getlogs_refused_total",
      help: "eth_getLogs calls refused by the range rules (range: below the window; future: past the head; invalid).",
      labelNames: ["network", "reason"],
      registers,
    }),
    panicMode: new Gauge({
      name: "lightfleet_gateway_panic_mode",
      help: "1 while no routed node is reachable and the gateway serves from any node that answers.",
      labelNames: ["network"],
      registers,
      // Over gateway workers (the rest sum): 1 when any worker is in panic mode.
      aggregator: "max",
    }),
    servedHead: new Gauge({
      name: "lightfleet_gateway_served_head_block",
      help: "The head the gateway serves (eth_blockNumber, latest).",
      labelNames: ["network"],
      registers,
      // Over gateway workers: the one furthest behind.
      aggregator: "min",
    }),
    wsConnections: new Gauge({
      name: "lightfleet_gateway_ws_connections",
      help: "Open WebSocket connections.",
      labelNames: ["network"],
      registers,
    }),
    wsSubscriptions: new Gauge({
      name: "lightfleet_gateway_ws_subscriptions",
      help: "Active eth_subscribe subscriptions, by type (newHeads, logs).",
      labelNames: ["network", "type"],
      registers,
    }),
    wsDisconnects: new Counter({
      name: "lightfleet_gateway_ws_disconnects_total",
      help: "WebSocket connections closed by the gateway, by reason (slow-consumer, ping-timeout, shutdown).",
      labelNames: ["network", "reason"],
      registers,
    }),
  };
}
