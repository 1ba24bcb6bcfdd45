import type { JsonRpcRequest } from "../../../rpc/jsonRpc.js";
import { RPC_ERROR } from "../../../rpc/jsonRpc.js";
import { SUBSCRIPTION_METHODS, checkMethod } from "../../rpc/methodPolicy.js";
import { errorResponse } from "../../rpc/parseRequest.js";
import type { Plan, PlanContext } from "../plan.js";
import { answered } from "../plan.js";

/**
 * Every method without a treatment of its own: refused outside the public namespaces, WebSocket only for
 * subscriptions, else forwarded to a node that has the served head.
 */
export function planForward(request: JsonRpcRequest, context: PlanContext): Plan {
  const id = request.id ?? null;
  const policy = checkMethod(request.method);
  if (!policy.allowed)
    return answered(errorResponse(id, RPC_ERROR.METHOD_NOT_FOUND, policy.message), "refused");
  if (SUBSCRIPTION_METHODS.has(request.method))
    return answered(
      errorResponse(id, RPC_ERROR.METHOD_NOT_FOUND, `${request.method} is served over WebSocket only (/ws)`),
      "refused",
    );
  return { kind: "forward", request, minBlock: context.served };
}
