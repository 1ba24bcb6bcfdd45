import type { JsonRpcRequest } from "../../../rpc/jsonRpc.js";
import { checkGetLogs } from "../../rpc/getLogsRule.js";
import { errorResponse } from "../../rpc/parseRequest.js";
import type { Plan, PlanContext } from "../plan.js";
import { byHash } from "./blockParameter.js";

/**
 * eth_getLogs within the window of `getLogsMaxRange` blocks below the head the client could have seen, its tags
 * resolved to heights (see getLogsRule.ts); a `blockHash` filter goes to a node whose chain holds the block.
 */
export function planGetLogs(request: JsonRpcRequest, context: PlanContext): Plan {
  const { served } = context;
  if (served === undefined) return { kind: "forward", request, minBlock: undefined };
  const verdict = checkGetLogs(
    request.params,
    served,
    context.getLogsMaxRange,
    context.lowestRecentHead(served),
    context.blockTags(served),
  );
  if (!verdict.ok)
    return {
      kind: "answer",
      response: errorResponse(request.id ?? null, verdict.code, verdict.message, verdict.data),
      outcome: "invalid",
      getLogsRefused: verdict.reason,
    };
  const forwarded = { ...request, params: verdict.params };
  return verdict.blockHash
    ? byHash(forwarded, verdict.blockHash, context)
    : { kind: "forward", request: forwarded, minBlock: verdict.toBlock ?? served, requireBlock: true };
}
