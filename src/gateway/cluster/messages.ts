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
