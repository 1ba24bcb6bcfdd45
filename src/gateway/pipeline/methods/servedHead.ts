import { toQuantity } from "../../../rpc/blocks.js";
import type { JsonRpcRequest } from "../../../rpc/jsonRpc.js";
import { extraArguments } from "../../rpc/blockParams.js";
import type { Plan, PlanContext, Planner } from "../plan.js";
import { answered, hasArguments } from "../plan.js";
import { planForward } from "./forwarding.js";

/**
 * eth_blockNumber, eth_chainId and eth_accounts: answered by the gateway, never by a node. Like a node, it takes no
 * arguments to them.
 */
export const SERVED_HEAD_METHODS = ["eth_blockNumber", "eth_chainId", "eth_accounts"] as const;

/**
 * The most frequent call of all: the served head (with shared state, the executor has resolved it against the head
 * served over every replica before planning).
 */
export function planBlockNumber(request: JsonRpcRequest, context: PlanContext): Plan {
  const { served } = context;
  if (served !== undefined && !hasArguments(request))
    return answered({ jsonrpc: "2.0", id: request.id ?? null, result: servedQuantity(served) }, "ok");
  return refuseArguments(request) ?? planForward(request, context);
}

/** The served head as a quantity, written once per head rather than once per call. */
let lastServed = -1;
let lastQuantity = "";
function servedQuantity(served: number): string {
  if (served !== lastServed) {
    lastServed = served;
    lastQuantity = toQuantity(served);
  }
  return lastQuantity;
}

/**
 * Asked before almost every session (and by some clients before every call); every node the gateway uses has been
 * checked to be on this chain, so none needs asking.
 */
export const planChainId: Planner = (request, context) =>
  refuseArguments(request) ??
  answered({ jsonrpc: "2.0", id: request.id ?? null, result: context.chainId }, "ok");

/** A public endpoint holds no keys: an empty list, as hosted endpoints answer (wallet libraries ask it). */
export const planAccounts: Planner = (request) =>
  refuseArguments(request) ?? answered({ jsonrpc: "2.0", id: request.id ?? null, result: [] }, "ok");

function refuseArguments(request: JsonRpcRequest): Plan | undefined {
  const refused = extraArguments(request);
  return refused && answered(refused, "invalid");
}
