import { RPC_ERROR } from "../../rpc/jsonRpc.js";
import { toQuantity } from "../../rpc/blocks.js";
import type { BlockTags } from "./blockParams.js";
import { readBlockHash, readBlockParam } from "./blockParams.js";

export type GetLogsVerdict =
  /** Forward with these params (tags resolved to heights, so every node answers for the same range). */
  | { ok: true; params: unknown[]; toBlock?: number; blockHash?: string }
  | { ok: false; code: number; message: string; data?: unknown; reason: "range" | "invalid" | "future" };

/**
 * The eth_getLogs rules of the public endpoints: `latest` resolves to the served head, `safe` and `finalized` to the
 * blocks the peers agree on (`tags`; left to the node while unknown, and judged as the head meanwhile), `earliest` to
 * block 0, and `pending` is refused as geth refuses it (-32602 "pending logs are not supported"); a range reaching below
 * `seenHead - maxRange` is refused with -32005 (EIP-1474 "limit exceeded") naming the limit and the earliest block
 * allowed; a toBlock past the head or fromBlock > toBlock is -32602, as execution-apis asks of nodes. `seenHead` is the
 * lowest head the client could have seen (served within the last block time; the served head by default), so a
 * client that read the head and asks for `head - maxRange` next is not refused because a block came in between.
 */
export function checkGetLogs(
  params: unknown,
  servedHead: number,
  maxRange: number,
  seenHead: number = servedHead,
  tags: BlockTags = {},
): GetLogsVerdict {
  const invalid = (message: string): GetLogsVerdict => ({
    ok: false,
    code: RPC_ERROR.INVALID_PARAMS,
    message,
    reason: "invalid",
  });
  if (
    !Array.isArray(params) ||
    params.length !== 1 ||
    !params[0] ||
    typeof params[0] !== "object" ||
    Array.isArray(params[0])
  )
    return invalid("invalid params: eth_getLogs takes one filter object");
  const filter = params[0] as Record<string, unknown>;
  if (filter.blockHash !== undefined) {
    if (filter.fromBlock !== undefined || filter.toBlock !== undefined)
      return invalid("invalid params: blockHash excludes fromBlock and toBlock");
    const blockHash = readBlockHash(filter.blockHash);
    if (!blockHash) return invalid("invalid params: blockHash must be a 32-byte hash");
    return { ok: true, params: [filter], blockHash };
  }
  const earliest = Math.max(0, Math.min(seenHead, servedHead) - maxRange);
  if (filter.fromBlock === "pending" || filter.toBlock === "pending")
    return invalid("pending logs are not supported");
  /** A height, and the parameter as forwarded: the height, or a tag still unknown here (left to the node). */
  const resolve = (value: unknown, name: string): { at: number; sent: unknown } | GetLogsVerdict => {
    const target = readBlockParam(value, servedHead, tags);
    if (target.kind === "number") return { at: target.number, sent: toQuantity(target.number) };
    if (target.kind === "tag") {
      if (target.tag === "earliest") return { at: 0, sent: toQuantity(0) };
      // safe / finalized not agreed yet: the node resolves it; for the range check it is at most the head.
      return { at: servedHead, sent: value };
    }
    return invalid(`invalid params: ${name} must be a block number or tag`);
  };
  const fromBlock = resolve(filter.fromBlock, "fromBlock");
  if ("ok" in fromBlock) return fromBlock;
  const toBlock = resolve(filter.toBlock, "toBlock");
  if ("ok" in toBlock) return toBlock;
  const from = fromBlock.at;
  const to = toBlock.at;
  if (to > servedHead)
    return {
      ok: false,
      code: RPC_ERROR.INVALID_PARAMS,
      message: `invalid params: toBlock ${exact(filter.toBlock, to)} is past the head ${servedHead}`,
      reason: "future",
    };
  if (from > to)
    return invalid(
      `invalid params: fromBlock ${exact(filter.fromBlock, from)} is after toBlock ${exact(filter.toBlock, to)}`,
    );
  if (from < earliest)
    return {
      ok: false,
      code: RPC_ERROR.LIMIT_EXCEEDED,
      message: `limit exceeded: eth_getLogs may reach at most ${maxRange} blocks below the head (earliest block ${earliest})`,
      data: { limit: maxRange, earliestBlock: toQuantity(earliest), head: toQuantity(servedHead) },
      reason: "range",
    };
  return {
    ok: true,
    params: [{ ...filter, fromBlock: fromBlock.sent, toBlock: toBlock.sent }],
    toBlock: to,
  };
}

/** A height for a message, exactly: a quantity beyond what a double holds is written from its hex, never rounded. */
function exact(value: unknown, resolved: number): string {
  if (Number.isSafeInteger(resolved)) return String(resolved);
  const quantity =
    typeof value === "object" && value ? (value as { blockNumber?: unknown }).blockNumber : value;
  return typeof quantity === "string" ? BigInt(quantity).toString() : String(resolved);
}
