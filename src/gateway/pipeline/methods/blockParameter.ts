import type { JsonRpcRequest } from "../../../rpc/jsonRpc.js";
import {
  BLOCK_HASH_METHODS,
  BLOCK_PARAM_METHODS,
  blockHashParamIndex,
  blockParamIndex,
  pinBlockParam,
  readBlockHash,
  readBlockParam,
} from "../../rpc/blockParams.js";
import { errorResponse } from "../../rpc/parseRequest.js";
import type { ForwardPlan, Plan, PlanContext } from "../plan.js";
import { HEADER_NOT_FOUND, answered } from "../plan.js";

/** Methods reading one block, or state at one block: the block parameter decides where they go. */
export const BLOCK_PARAMETER_METHODS = [...BLOCK_PARAM_METHODS, ...BLOCK_HASH_METHODS];

/** Methods answering `null` (not an error) for a block above the head, as a node at that head would. */
const NULL_ABOVE_HEAD = new Set([
  "eth_getBlockByNumber",
  "eth_getBlockReceipts",
  "eth_getBlockTransactionCountByNumber",
  "eth_getUncleCountByBlockNumber",
  "eth_getTransactionByBlockNumberAndIndex",
  "eth_getUncleByBlockNumberAndIndex",
]);

/**
 * Tags resolved against the served head, so every node answers for the same block: `latest` (and `safe`, `finalized`
 * once agreed) pinned to a number; a number above the head answered as a node at that head would; a block hash sent
 * to a node whose chain holds it.
 */
export function planBlockParameter(request: JsonRpcRequest, context: PlanContext): Plan {
  const { served } = context;
  if (served === undefined) return { kind: "forward", request, minBlock: undefined };
  const hashIndex = blockHashParamIndex(request.method);
  if (hashIndex !== undefined && Array.isArray(request.params)) {
    const hash = readBlockHash(request.params[hashIndex]);
    return hash ? byHash(request, hash, context) : { kind: "forward", request, minBlock: served };
  }
  const index = blockParamIndex(request.method);
  if (index === undefined || !Array.isArray(request.params))
    return { kind: "forward", request, minBlock: served };
  const value = request.params[index];
  const tags = context.blockTags(served);
  const target = readBlockParam(value, served, tags);
  if (target.kind === "hash") return byHash(request, target.hash, context);
  if (target.kind !== "number")
    return { kind: "forward", request, minBlock: target.kind === "tag" ? undefined : served };
  const nullIfMissing = NULL_ABOVE_HEAD.has(request.method);
  if (target.number > served) {
    const id = request.id ?? null;
    return nullIfMissing
      ? answered({ jsonrpc: "2.0", id, result: null }, "ok")
      : answered(errorResponse(id, HEADER_NOT_FOUND, "header not found"), "rpc_error");
  }
  // A block named by number goes as the client wrote it: the call is copied only when a tag is pinned (two spreads
  // per call cost about 2k instructions, for nothing when the parameter stays).
  const pinned = pinBlockParam(value, served, tags);
  const plan: ForwardPlan = {
    kind: "forward",
    request: pinned === value ? request : withParam(request, request.params, index, pinned),
    minBlock: target.number,
    requireBlock: true,
  };
  if (nullIfMissing) plan.nullIfMissing = true;
  return plan;
}

/** The call with its parameter at `index` replaced. */
function withParam(
  request: JsonRpcRequest,
  params: unknown[],
  index: number,
  value: unknown,
): JsonRpcRequest {
  const copy = params.slice();
  copy[index] = value;
  return { ...request, params: copy };
}

/**
 * A call naming a block by hash goes to a node whose chain holds that block (a node behind has not got it yet, a node
 * on another branch never will); a hash older than the nodes' recent history is on every node, or on none.
 */
export function byHash(request: JsonRpcRequest, hash: string, context: PlanContext): ForwardPlan {
  const height = context.heightOfHash(hash);
  return height === undefined
    ? { kind: "forward", request, minBlock: undefined }
    : { kind: "forward", request, minBlock: height, requireBlock: true, blockHash: hash };
}
