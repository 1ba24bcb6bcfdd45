import type { JsonRpcRequest, JsonRpcResponse } from "../../rpc/jsonRpc.js";
import { RPC_ERROR } from "../../rpc/jsonRpc.js";
import { pendingLogsRefused, readBlockParam } from "../rpc/blockParams.js";
import { errorResponse } from "../rpc/parseRequest.js";
import type { LogFilter } from "../ws/logFilter.js";
import { parseLogFilter } from "../ws/logFilter.js";

/** eth_newFilter's filter object, checked: its criteria as given, what they match, numeric block bounds. */
export interface LogFilterParams {
  /** The filter object as the client gave it (for eth_getFilterLogs). */
  criteria: Record<string, unknown>;
  match: LogFilter;
  /** Heights a numeric fromBlock/toBlock bounds the changes to. */
  from?: number;
  to?: number;
}

/** eth_newFilter's params, or what is wrong with them (for an "invalid params" answer). */
export function parseLogFilterParams(params: unknown[]): LogFilterParams | string {
  const criteria = params[0] ?? {};
  if (params.length > 1 || !criteria || typeof criteria !== "object" || Array.isArray(criteria))
    return "eth_newFilter takes one filter object";
  const c = criteria as Record<string, unknown>;
  if (c.blockHash !== undefined) return "a filter follows new blocks: blockHash is for eth_getLogs";
  const match = parseLogFilter({ address: c.address, topics: c.topics });
  if (typeof match === "string") return match;
  const bound = (value: unknown, name: string): number | undefined | string => {
    if (value === undefined || value === null) return undefined;
    const target = readBlockParam(value, Number.MAX_SAFE_INTEGER);
    if (target.kind === "tag") return undefined;
    if (target.kind !== "number" || value === "latest")
      return value === "latest" ? undefined : `${name} must be a block number or tag`;
    return target.number;
  };
  const from = bound(c.fromBlock, "fromBlock");
  const to = bound(c.toBlock, "toBlock");
  if (typeof from === "string") return from;
  if (typeof to === "string") return to;
  return {
    criteria: c,
    match,
    ...(from !== undefined ? { from } : {}),
    ...(to !== undefined ? { to } : {}),
  };
}

/**
 * eth_newFilter's params checked as geth checks them, for every filter store alike: the parsed filter, or the error
 * to answer (`pending` refused as geth refuses it, anything else malformed as invalid params).
 */
export function readNewLogFilter(
  id: JsonRpcRequest["id"],
  params: unknown[],
): LogFilterParams | JsonRpcResponse {
  const first = params[0];
  if (first && typeof first === "object" && !Array.isArray(first)) {
    const c = first as Record<string, unknown>;
    if (c.fromBlock === "pending" || c.toBlock === "pending") return pendingLogsRefused(id);
  }
  const parsed = parseLogFilterParams(params);
  return typeof parsed === "string"
    ? errorResponse(id ?? null, RPC_ERROR.INVALID_PARAMS, `invalid params: ${parsed}`)
    : parsed;
}
