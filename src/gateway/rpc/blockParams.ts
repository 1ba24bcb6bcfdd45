import type { JsonRpcRequest, JsonRpcResponse } from "../../rpc/jsonRpc.js";
import { RPC_ERROR } from "../../rpc/jsonRpc.js";
import { errorResponse } from "./parseRequest.js";

/**
 * Position of the block parameter of methods that read state at a block (execution-apis). Maps, not objects: a look-up
 * by a method name in an object of this many keys went through V8's megamorphic path (about 0.6k instructions a call).
 */
const BLOCK_PARAM = new Map<string, number>(
  Object.entries({
    eth_getBalance: 1,
    eth_getCode: 1,
    eth_getTransactionCount: 1,
    eth_getStorageAt: 2,
    eth_call: 1,
    eth_estimateGas: 1,
    eth_createAccessList: 1,
    eth_getProof: 2,
    eth_getBlockByNumber: 0,
    eth_getBlockReceipts: 0,
    eth_getBlockTransactionCountByNumber: 0,
    eth_getUncleCountByBlockNumber: 0,
    eth_getTransactionByBlockNumberAndIndex: 0,
    eth_getUncleByBlockNumberAndIndex: 0,
  }),
);

/** Position of the block hash of methods that read one block by its hash. */
const BLOCK_HASH_PARAM = new Map<string, number>(
  Object.entries({
    eth_getBlockByHash: 0,
    eth_getBlockTransactionCountByHash: 0,
    eth_getTransactionByBlockHashAndIndex: 0,
    eth_getUncleCountByBlockHash: 0,
    eth_getUncleByBlockHashAndIndex: 0,
  }),
);

/** The methods with a block parameter. */
export const BLOCK_PARAM_METHODS = [...BLOCK_PARAM.keys()];
/** The methods reading one block by its hash. */
export const BLOCK_HASH_METHODS = [...BLOCK_HASH_PARAM.keys()];

export function blockParamIndex(method: string): number | undefined {
  return BLOCK_PARAM.get(method);
}

export function blockHashParamIndex(method: string): number | undefined {
  return BLOCK_HASH_PARAM.get(method);
}

/** A block parameter as the gateway sees it: a height, a block hash, or a tag it leaves to the node. */
export type BlockTarget =
  | { kind: "number"; number: number }
  | { kind: "hash"; hash: string }
  | { kind: "tag"; tag: string }
  | { kind: "invalid" };

const QUANTITY = /^0x(0|[1-9a-f][0-9a-f]*)$/i;

/** The last value read as a block hash and what it read as: a call's hash is read by its plan, then its cache key. */
let lastValue: unknown;
let lastHash: string | undefined;

/** A 32-byte block hash, lower-cased as the gateway keeps them; undefined for anything else. */
export function readBlockHash(value: unknown): string | undefined {
  if (value === lastValue) return lastHash;
  lastValue = value;
  lastHash = typeof value === "string" ? lowerCaseHash(value) : undefined;
  return lastHash;
}

/**
 * `0x` and 64 hex digits, lower-cased (a new string only when it has capitals); undefined for anything else. Read
 * character by character: a regular expression cost more than the rest of planning the call.
 */
function lowerCaseHash(text: string): string | undefined {
  if (text.length !== 66 || text.charCodeAt(0) !== 0x30 || (text.charCodeAt(1) | 0x20) !== 0x78)
    return undefined;
  let capitals = false;
  for (let i = 2; i < 66; i++) {
    const c = text.charCodeAt(i);
    if (c >= 0x30 && c <= 0x39) continue;
    const lower = c | 0x20;
    if (lower < 0x61 || lower > 0x66) return undefined;
    if (c !== lower) capitals = true;
  }
  return capitals || text.charCodeAt(1) !== 0x78 ? text.toLowerCase() : text;
}

/**
 * A quantity's value (`0x` and hex digits, no leading zero: QUANTITY); undefined for anything else. Read character by
 * character, as lowerCaseHash: the pattern and parseInt cost about 0.6k instructions per block parameter read. Past
 * 13 digits (2^52) the pattern and parseInt, which round as before.
 */
function quantityValue(text: string): number | undefined {
  const length = text.length;
  if (length < 3 || text.charCodeAt(0) !== 0x30 || (text.charCodeAt(1) | 0x20) !== 0x78) return undefined;
  if (length > 15) return QUANTITY.test(text) ? Number.parseInt(text, 16) : undefined;
  if (text.charCodeAt(2) === 0x30) return length === 3 ? 0 : undefined;
  let value = 0;
  for (let i = 2; i < length; i++) {
    const c = text.charCodeAt(i);
    if (c >= 0x30 && c <= 0x39) {
      value = value * 16 + (c - 0x30);
      continue;
    }
    const lower = c | 0x20;
    if (lower < 0x61 || lower > 0x66) return undefined;
    value = value * 16 + (lower - 0x57);
  }
  return value;
}

/**
 * The heights of the `safe` and `finalized` tags as the gateway serves them: the blocks the peers agree on, never above
 * the served head; absent while they are not known (the tag is then left to the node).
 */
export interface BlockTags {
  safe?: number;
  finalized?: number;
}

/** geth's refusal of `pending` in a log filter (eth_getLogs, eth_newFilter); clients know it. */
export function pendingLogsRefused(id: JsonRpcRequest["id"]): JsonRpcResponse {
  return errorResponse(id ?? null, RPC_ERROR.INVALID_PARAMS, "pending logs are not supported");
}

/** geth's refusal of arguments to a method that takes none (eth_blockNumber [1, 2]); undefined when there are none. */
export function extraArguments(request: JsonRpcRequest): JsonRpcResponse | undefined {
  const params = request.params;
  return Array.isArray(params) && params.length > 0
    ? errorResponse(request.id ?? null, RPC_ERROR.INVALID_PARAMS, "too many arguments, want at most 0")
    : undefined;
}

/**
 * Reads a block number, hash or tag, in every EIP-1898 form (a quantity, a tag, a bare hash as geth takes it,
 * `{blockNumber}`, `{blockHash, requireCanonical}`); "latest" (and an absent parameter) resolve to the served head,
 * "safe" and "finalized" to the agreed blocks when `tags` knows them.
 */
export function readBlockParam(value: unknown, servedHead: number, tags: BlockTags = {}): BlockTarget {
  if (value === undefined || value === "latest") return { kind: "number", number: servedHead };
  if (typeof value === "string") {
    // A 32-byte hash is also a valid quantity: told apart by its length, as geth does.
    const hash = readBlockHash(value);
    if (hash) return { kind: "hash", hash };
    const number = quantityValue(value);
    if (number !== undefined) return { kind: "number", number };
    if (value === "safe" || value === "finalized") {
      const known = tags[value];
      return known === undefined ? { kind: "tag", tag: value } : { kind: "number", number: known };
    }
    if (value === "earliest" || value === "pending") return { kind: "tag", tag: value };
    return { kind: "invalid" };
  }
  if (value && typeof value === "object") {
    // EIP-1898: {blockNumber} or {blockHash}.
    const v = value as { blockNumber?: unknown; blockHash?: unknown };
    if (typeof v.blockNumber === "string" && v.blockHash === undefined) {
      const target = readBlockParam(v.blockNumber, servedHead, tags);
      return target.kind === "hash" ? { kind: "invalid" } : target;
    }
    const hash = readBlockHash(v.blockHash);
    if (hash && v.blockNumber === undefined) return { kind: "hash", hash };
  }
  return { kind: "invalid" };
}

/**
 * The block parameter as forwarded: "latest", in either form, becomes the served head's number, and "safe" or
 * "finalized" the agreed block's, so every node answers for the same block; anything else is left as the client
 * wrote it.
 */
export function pinBlockParam(value: unknown, servedHead: number, tags: BlockTags = {}): unknown {
  const pinned = (tag: unknown): string | undefined => {
    const number =
      tag === "latest" ? servedHead : tag === "safe" || tag === "finalized" ? tags[tag] : undefined;
    return number === undefined ? undefined : `0x${number.toString(16)}`;
  };
  if (typeof value === "string") return pinned(value) ?? value;
  if (value && typeof value === "object") {
    const number = pinned((value as { blockNumber?: unknown }).blockNumber);
    if (number !== undefined) return { ...value, blockNumber: number };
  }
  return value;
}
