import type { JsonRpcRequest, JsonRpcResponse } from "../../rpc/jsonRpc.js";

/** What a gateway worker tells the primary, at start and then whenever it changes (`whenChanged`). */
export interface WorkerStatus {
  kind: "lightfleet-gateway-status";
  url: string;
  /** Served head per network; null before the first. */
  heads: Record<string, number | null>;
  /** Oldest EndpointSlice cache sync (epoch ms), when the worker follows Services. */
  slicesSynced?: number | null;
}

/**
 * `send`, called only for a message that differs from the last one sent: a worker checks its status every half
 * second, and sending it unchanged woke the primary that often per worker for nothing (the primary keeps the last).
 */
export function whenChanged<T>(send: (message: T) => void): (message: T) => void {
  let last: string | undefined;
  return (message) => {
    const text = JSON.stringify(message);
    if (text === last) return;
    last = text;
    send(message);
  };
}

/** The primary, told to stop, asks a worker to start its drain (keep serving, ask clients to reconnect). */
export interface DrainWorker {
  kind: "lightfleet-gateway-drain";
}

/** The primary asks a worker to drain and exit. */
export interface StopWorker {
  kind: "lightfleet-gateway-stop";
}

/** The primary asks a worker for its metrics (`Registry.getMetricsAsJSON`). */
export interface MetricsRequest {
  kind: "lightfleet-gateway-metrics";
  id: number;
}

export interface MetricsReply {
  kind: "lightfleet-gateway-metrics-reply";
  id: number;
  metrics?: unknown[];
  error?: string;
}

/** Rate-limit spending: a worker tells the primary what its clients spent; the primary passes it on to the others. */
export interface RateSpending {
  kind: "lightfleet-gateway-spent";
  spent: Array<[string, number]>;
}

/**
 * What the primary counts per address over all workers: WebSocket connections (`maxWsConnectionsPerAddress`), or
 * filters (`maxFiltersPerAddress`, the address prefixed with its network).
 */
export type CountedPool = "ws" | "filters";

/** A worker asks the primary to count a WebSocket connection (or a filter) of an address against its cap. */
export interface ConnectionAcquire {
  kind: "lightfleet-gateway-ws-acquire";
  id: number;
  address: string;
  /** Absent: "ws". */
  pool?: CountedPool;
}

export interface ConnectionGrant {
  kind: "lightfleet-gateway-ws-grant";
  id: number;
  ok: boolean;
  pool?: CountedPool;
}

/** A counted connection closed (or filter went). */
export interface ConnectionRelease {
  kind: "lightfleet-gateway-ws-release";
  address: string;
  pool?: CountedPool;
}

/**
 * A call on a filter that another worker holds (its id names it): the asking worker sends it to the primary, which
 * sends it on to the owner with an id of its own. The request goes without the client's id (the asker puts it back).
 */
export interface FilterCall {
  kind: "lightfleet-gateway-filter-call";
  id: number;
  owner: number;
  network: string;
  client: string;
  request: JsonRpcRequest;
}

/** The owner's answer, back the same way (or the primary's "filter not found" when the owner is gone). */
export interface FilterReply {
  kind: "lightfleet-gateway-filter-reply";
  id: number;
  response: JsonRpcResponse;
}

/** A guard for one kind of message. Messages come only from the gateway's own processes, so the kind tells. */
function guard<T extends { kind: string }>(kind: T["kind"]) {
  return (message: unknown): message is T => (message as { kind?: unknown } | null)?.kind === kind;
}

export const isWorkerStatus = guard<WorkerStatus>("lightfleet-gateway-status");
export const isStopWorker = guard<StopWorker>("lightfleet-gateway-stop");
export const isDrainWorker = guard<DrainWorker>("lightfleet-gateway-drain");
export const isMetricsRequest = guard<MetricsRequest>("lightfleet-gateway-metrics");
export const isMetricsReply = guard<MetricsReply>("lightfleet-gateway-metrics-reply");
export const isRateSpending = guard<RateSpending>("lightfleet-gateway-spent");
export const isConnectionAcquire = guard<ConnectionAcquire>("lightfleet-gateway-ws-acquire");
export const isConnectionGrant = guard<ConnectionGrant>("lightfleet-gateway-ws-grant");
export const isConnectionRelease = guard<ConnectionRelease>("lightfleet-gateway-ws-release");
export const isFilterCall = guard<FilterCall>("lightfleet-gateway-filter-call");
export const isFilterReply = guard<FilterReply>("lightfleet-gateway-filter-reply");
