import type { JsonRpcRequest } from "../../../rpc/jsonRpc.js";
import { RPC_ERROR } from "../../../rpc/jsonRpc.js";
import { errorResponse } from "../../rpc/parseRequest.js";
import { rawTransactionHash, transactionSender } from "../../upstreams/broadcastTransaction.js";
import type { Plan, PlanContext } from "../plan.js";
import { answered } from "../plan.js";

/**
 * eth_sendRawTransaction: one signed transaction as 0x-prefixed hex, broadcast to every node that may serve; with the
 * per-sender limit, its sender recovered from the signature (the limit is taken when the plan is carried out).
 */
export function planSendRawTransaction(request: JsonRpcRequest, context: PlanContext): Plan {
  const id = request.id ?? null;
  const hash = rawTransactionHash(request.params);
  if (!hash)
    return answered(
      errorResponse(
        id,
        RPC_ERROR.INVALID_PARAMS,
        "invalid params: eth_sendRawTransaction takes one signed transaction as 0x-prefixed hex",
      ),
      "invalid",
    );
  if (!context.limitsSenders) return { kind: "broadcast", request, hash };
  const sender = transactionSender((request.params as string[])[0]!);
  if (!sender)
    return answered(
      errorResponse(id, RPC_ERROR.INVALID_PARAMS, "invalid params: not a signed transaction"),
      "invalid",
    );
  return { kind: "broadcast", request, hash, sender };
}
