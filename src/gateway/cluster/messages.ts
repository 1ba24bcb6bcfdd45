/** What a gateway worker tells the primary, at start and then periodically. */
export interface WorkerStatus {
  kind: "lightfleet-gateway-status";
  url: string;
  /** Served head per network; null before the first. */
  heads: Record<string, number | null>;
  /** Oldest EndpointSlice cache sync (epoch ms), when the worker follows Services. */
  slicesSynced?: number | null;
}

/** The primary asks a worker to drain and exit. */
export interface StopWorker {
  kind: "lightfleet-gateway-stop";
}

export function isWorkerStatus(message: unknown): message is WorkerStatus {
  return (message as WorkerStatus | null)?.kind === "lightfleet-gateway-status";
}

export function isStopWorker(message: unknown): message is StopWorker {
  return (message as StopWorker | null)?.kind === "lightfleet-gateway-stop";
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

export function isMetricsRequest(message: unknown): message is MetricsRequest {
  return (message as MetricsRequest | null)?.kind === "lightfleet-gateway-metrics";
}

export function isMetricsReply(message: unknown): message is MetricsReply {
  return (message as MetricsReply | null)?.kind === "lightfleet-gateway-metrics-reply";
}

/** Rate-limit spending: a worker tells the primary what its clients spent; the primary passes it on to the others. */
export interface RateSpending {
  kind: "lightfleet-gateway-spent";
  spent: Array<[string, number]>;
}

export function isRateSpending(message: unknown): message is RateSpending {
  const candidate = message as RateSpending | null;
  return candidate?.kind === "lightfleet-gateway-spent" && Array.isArray(candidate.spent);
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

export function isConnectionAcquire(message: unknown): message is ConnectionAcquire {
  const candidate = message as ConnectionAcquire | null;
  return candidate?.kind === "lightfleet-gateway-ws-acquire" && typeof candidate.address === "string";
}

export function isConnectionGrant(message: unknown): message is ConnectionGrant {
  return (message as ConnectionGrant | null)?.kind === "lightfleet-gateway-ws-grant";
}

export function isConnectionRelease(message: unknown): message is ConnectionRelease {
  const candidate = message as ConnectionRelease | null;
  return candidate?.kind === "lightfleet-gateway-ws-release" && typeof candidate.address === "string";
}
