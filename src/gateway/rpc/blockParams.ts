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

export function blockParamIndex(method: string): number | undefined {
  return BLOCK_PARAM[method];
}

/** A block parameter as the gateway sees it: a height, or a tag it leaves to the node. */
export type BlockTarget =
  { kind: "number"; number: number } | { kind: "tag"; tag: string } | { kind: "invalid" };

const QUANTITY = /^0x(0|[1-9a-f][0-9a-f]*)$/i;

/** Reads a block number or tag; "latest" (and an absent parameter) resolve to the served head. */
export function readBlockParam(value: unknown, servedHead: number): BlockTarget {
  if (value === undefined || value === "latest") return { kind: "number", number: servedHead };
  if (typeof value === "string") {
    if (QUANTITY.test(value)) return { kind: "number", number: Number.parseInt(value, 16) };
    if (["earliest", "pending", "safe", "finalized"].includes(value)) return { kind: "tag", tag: value };
    return { kind: "invalid" };
  }
  if (value && typeof value === "object") {
    // EIP-1898: {blockNumber} or {blockHash}.
    const v = value as { blockNumber?: unknown; blockHash?: unknown };
    if (typeof v.blockNumber === "string") return readBlockParam(v.blockNumber, servedHead);
    if (typeof v.blockHash === "string") return { kind: "tag", tag: "blockHash" };
  }
  return { kind: "invalid" };
}
