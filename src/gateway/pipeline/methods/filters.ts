import type { JsonRpcRequest } from "../../../rpc/jsonRpc.js";
import type { Plan, PlanContext } from "../plan.js";
import { planForward } from "./forwarding.js";

/** The filter methods the gateway serves itself, from its own streams, per client address. */
export const FILTER_METHODS = new Set([
  "eth_newFilter",
  "eth_newBlockFilter",
  "eth_newPendingTransactionFilter",
  "eth_getFilterChanges",
  "eth_getFilterLogs",
  "eth_uninstallFilter",
]);

export function planFilters(request: JsonRpcRequest, context: PlanContext): Plan {
  return context.filters ? { kind: "filters" } : planForward(request, context);
}
