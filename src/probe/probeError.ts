import type { ProbeErrorReason } from "../metrics/probeMetrics.js";
import { RpcError, RpcTransportError } from "../rpc/jsonRpc.js";

/** Maps a probe failure to the bounded reason used in metrics. */
export function probeErrorReason(error: unknown): ProbeErrorReason {
  if (error instanceof RpcTransportError) return error.reason;
  if (error instanceof RpcError) return "rpc-error";
  return "connection";
}

export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
