import type { GatewayOutcome } from "../../metrics/gatewayMetrics.js";
import type { JsonRpcId, JsonRpcResponse, RpcTransportError } from "../../rpc/jsonRpc.js";
import { RPC_ERROR } from "../../rpc/jsonRpc.js";
import { errorResponse } from "../rpc/parseRequest.js";

/** An answer and how it counts in the metrics. */
export interface Answered {
  response: JsonRpcResponse;
  outcome: GatewayOutcome;
}

/**
 * Every failure a client can see of the call path, in one place: no node to ask (-32603 "no node available for
 * <network>"), the last node timed out (-32603 "upstream timeout") or failed (-32603 "upstream unavailable"), or the
 * gateway itself failed (-32603 "internal error", logged; never a stack trace to the client).
 */
export type Failure =
  { kind: "noNode"; network: string } | { kind: "node"; error: RpcTransportError } | { kind: "unexpected" };

export function failureAnswer(id: JsonRpcId | undefined, failure: Failure): Answered {
  const answer = (message: string, outcome: GatewayOutcome): Answered => ({
    response: errorResponse(id ?? null, RPC_ERROR.INTERNAL_ERROR, message),
    outcome,
  });
  switch (failure.kind) {
    case "noNode":
      return answer(`no node available for ${failure.network}`, "unavailable");
    case "node":
      return failure.error.reason === "timeout"
        ? answer("upstream timeout", "timeout")
        : answer("upstream unavailable", "upstream_error");
    case "unexpected":
      return answer("internal error", "upstream_error");
  }
}
