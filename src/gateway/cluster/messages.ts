/** What a gateway worker tells the primary, at start and then periodically. */
export interface WorkerStatus {
  kind: "lightfleet-gateway-status";
  url: string;
  /** Served head per network; null before the first. */
  heads: Record<string, number | null>;
  /** Oldest EndpointSlice cache sync (epoch ms), when the worker follows Services. */
  slicesSynced?: number | null;
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

/** A worker asks the primary to count a WebSocket connection of an address against the cap of all workers. */
export interface ConnectionAcquire {
  kind: "lightfleet-gateway-ws-acquire";
  id: number;
  address: string;
}

export interface ConnectionGrant {
  kind: "lightfleet-gateway-ws-grant";
  id: number;
  ok: boolean;
}

/** A counted connection closed. */
export interface ConnectionRelease {
  kind: "lightfleet-gateway-ws-release";
  address: string;
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
