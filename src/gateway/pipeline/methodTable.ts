import type { JsonRpcRequest } from "../../rpc/jsonRpc.js";
import { BLOCK_PARAMETER_METHODS, planBlockParameter } from "./methods/blockParameter.js";
import { FILTER_METHODS, planFilters } from "./methods/filters.js";
import { planForward } from "./methods/forwarding.js";
import { planGetLogs } from "./methods/getLogsWindow.js";
import { planAccounts, planBlockNumber, planChainId } from "./methods/servedHead.js";
import { planSendRawTransaction } from "./methods/transactions.js";
import type { Plan, PlanContext, Planner } from "./plan.js";

/**
 * Which method goes where: each method the gateway treats specially, to its family's planner. Every other method is
 * forwarded (methods/forwarding.ts), after the method policy, at one table look-up's cost.
 */
export const METHOD_TABLE: ReadonlyMap<string, Planner> = new Map<string, Planner>([
  ["eth_blockNumber", planBlockNumber],
  ["eth_chainId", planChainId],
  ["eth_accounts", planAccounts],
  ...BLOCK_PARAMETER_METHODS.map((method): [string, Planner] => [method, planBlockParameter]),
  ["eth_getLogs", planGetLogs],
  ...[...FILTER_METHODS].map((method): [string, Planner] => [method, planFilters]),
  ["eth_sendRawTransaction", planSendRawTransaction],
]);

/** What to do with one call (see Plan). Pure: the context is a snapshot of the network. */
export function planCall(request: JsonRpcRequest, context: PlanContext): Plan {
  return (METHOD_TABLE.get(request.method) ?? planForward)(request, context);
}
