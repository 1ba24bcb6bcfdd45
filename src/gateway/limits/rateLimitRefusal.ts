import type { JsonRpcRequest, JsonRpcResponse } from "../../rpc/jsonRpc.js";
import { RPC_ERROR } from "../../rpc/jsonRpc.js";
import type { ParsedBody } from "../rpc/parseRequest.js";
import { errorResponse } from "../rpc/parseRequest.js";

/** How many calls a body holds, as the rate limit counts them (a batch counts each item). */
export function callCount(parsed: ParsedBody): number {
  return parsed.kind === "batch" ? parsed.items.length : 1;
}

/** The valid calls of a body (for metrics of refused calls). */
export function callsOf(parsed: ParsedBody): JsonRpcRequest[] {
  const items = parsed.kind === "batch" ? parsed.items : parsed.kind === "single" ? [parsed.item] : [];
  return items.flatMap((item) => (item.ok ? [item.request] : []));
}

/**
 * The answer to a body refused by the rate limit: -32005 (EIP-1474 "limit exceeded") for each call, keeping the
 * client's ids so a batch answer still lines up with its calls; `data` says when to try again.
 */
export function rateLimitRefusal(
  parsed: ParsedBody,
  retryAfterMs: number,
): JsonRpcResponse | JsonRpcResponse[] {
  const refuse = (id: JsonRpcRequest["id"]) =>
    errorResponse(
      id ?? null,
      RPC_ERROR.LIMIT_EXCEEDED,
      "limit exceeded: too many requests from this address",
      {
        retryAfterMs,
      },
    );
  if (parsed.kind !== "batch")
    return refuse(parsed.kind === "single" && parsed.item.ok ? parsed.item.request.id : null);
  return parsed.items.map((item) => refuse(item.ok ? item.request.id : null));
}
