/** Position of the block parameter of methods that read state at a block (execution-apis). */
const BLOCK_PARAM: Record<string, number> = {
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
};

/** Position of the block hash of methods that read one block by its hash. */
const BLOCK_HASH_PARAM: Record<string, number> = {
  eth_getBlockByHash: 0,
  eth_getBlockTransactionCountByHash: 0,
  eth_getTransactionByBlockHashAndIndex: 0,
  eth_getUncleCountByBlockHash: 0,
  eth_getUncleByBlockHashAndIndex: 0,
};

export function blockParamIndex(method: string): number | undefined {
  return BLOCK_PARAM[method];
}

export function blockHashParamIndex(method: string): number | undefined {
  return BLOCK_HASH_PARAM[method];
}

/** A block parameter as the gateway sees it: a height, a block hash, or a tag it leaves to the node. */
export type BlockTarget =
  | { kind: "number"; number: number }
  | { kind: "hash"; hash: string }
  | { kind: "tag"; tag: string }
  | { kind: "invalid" };

const QUANTITY = /^0x(0|[1-9a-f][0-9a-f]*)$/i;
const HASH = /^0x[0-9a-f]{64}$/i;

/** A 32-byte block hash, lower-cased as the gateway keeps them; undefined for anything else. */
export function readBlockHash(value: unknown): string | undefined {
  return typeof value === "string" && HASH.test(value) ? value.toLowerCase() : undefined;
}

/**
 * Reads a block number, hash or tag, in every EIP-1898 form (a quantity, a tag, a bare hash as geth takes it,
 * `{blockNumber}`, `{blockHash, requireCanonical}`); "latest" (and an absent parameter) resolve to the served head.
 */
export function readBlockParam(value: unknown, servedHead: number): BlockTarget {
  if (value === undefined || value === "latest") return { kind: "number", number: servedHead };
  if (typeof value === "string") {
    // A 32-byte hash is also a valid quantity: told apart by its length, as geth does.
    const hash = readBlockHash(value);
    if (hash) return { kind: "hash", hash };
    if (QUANTITY.test(value)) return { kind: "number", number: Number.parseInt(value, 16) };
    if (["earliest", "pending", "safe", "finalized"].includes(value)) return { kind: "tag", tag: value };
    return { kind: "invalid" };
  }
  if (value && typeof value === "object") {
    // EIP-1898: {blockNumber} or {blockHash}.
    const v = value as { blockNumber?: unknown; blockHash?: unknown };
    if (typeof v.blockNumber === "string" && v.blockHash === undefined) {
      const target = readBlockParam(v.blockNumber, servedHead);
      return target.kind === "hash" ? { kind: "invalid" } : target;
    }
    const hash = readBlockHash(v.blockHash);
    if (hash && v.blockNumber === undefined) return { kind: "hash", hash };
  }
  return { kind: "invalid" };
}

/**
 * The block parameter as forwarded: "latest", in either form, becomes the served head's number, so every node answers
 * for the same block; anything else is left as the client wrote it.
 */
export function pinBlockParam(value: unknown, servedHead: number): unknown {
  const head = `0x${servedHead.toString(16)}`;
  if (value === "latest") return head;
  if (value && typeof value === "object" && (value as { blockNumber?: unknown }).blockNumber === "latest")
    return { ...value, blockNumber: head };
  return value;
}
