import { LRUCache } from "lru-cache";
import type { JsonRpcRequest } from "../../rpc/jsonRpc.js";
import { blockHashParamIndex, blockParamIndex, readBlockHash, readBlockParam } from "./blockParams.js";

/** The block an answer belongs to: it may be served again while that block is final or on the nodes' chain. */
export interface AnswerBlock {
  number?: number;
  hash?: string;
}

/**
 * How a call may be cached: its key, and the block its answer belongs to, or "inResult" when the answer names it
 * (a transaction or receipt by hash: its blockHash and blockNumber).
 */
export interface CachePlan {
  key: string;
  block: AnswerBlock | "inResult";
}

/** Transactions and receipts by their own hash: the answer says which block holds them. */
const BY_TRANSACTION_HASH = new Set(["eth_getTransactionByHash", "eth_getTransactionReceipt"]);

/**
 * Whether a call's answer cannot change, and so may be cached: a block (or its transactions, receipts, counts) by
 * hash; a transaction or receipt by hash (valid while its block is); anything at an explicit block number at or
 * below `finalized`; state reads at an explicit block hash. Never a tag (latest, safe, finalized, pending, earliest)
 * nor a number above finalized: those may be answered differently after a reorg or a new block. `original` is the
 * call as the client wrote it (its tags), `forwarded` as it goes to the node (the key). Pure.
 */
export function cachePlan(
  original: JsonRpcRequest,
  forwarded: JsonRpcRequest,
  finalized: number | undefined,
): CachePlan | undefined {
  const params = original.params;
  if (!Array.isArray(params)) return undefined;
  const key = `${forwarded.method}\n${JSON.stringify(forwarded.params ?? [])}`;
  if (BY_TRANSACTION_HASH.has(original.method))
    return readBlockHash(params[0]) && params.length === 1 ? { key, block: "inResult" } : undefined;
  const hashIndex = blockHashParamIndex(original.method);
  if (hashIndex !== undefined) {
    const hash = readBlockHash(params[hashIndex]);
    return hash ? { key, block: { hash } } : undefined;
  }
  const index = blockParamIndex(original.method);
  // An absent block parameter means latest.
  if (index === undefined || params[index] === undefined) return undefined;
  // The served head stands in for latest: any number will do, since tags are refused below.
  const target = readBlockParam(params[index], Number.MAX_SAFE_INTEGER);
  if (target.kind === "hash") return { key, block: { hash: target.hash } };
  if (target.kind !== "number" || isLatest(params[index])) return undefined;
  return finalized !== undefined && target.number <= finalized
    ? { key, block: { number: target.number } }
    : undefined;
}

function isLatest(value: unknown): boolean {
  return (
    value === "latest" ||
    (typeof value === "object" &&
      value !== null &&
      (value as { blockNumber?: unknown }).blockNumber === "latest")
  );
}

/** The block a transaction or receipt answer sits in; undefined for null or a pending transaction. */
export function blockOfAnswer(result: unknown): AnswerBlock | undefined {
  const r = result as { blockHash?: unknown; blockNumber?: unknown } | null;
  const hash = readBlockHash(r?.blockHash);
  if (!hash || typeof r?.blockNumber !== "string") return undefined;
  const number = Number.parseInt(r.blockNumber, 16);
  return Number.isSafeInteger(number) ? { hash, number } : undefined;
}

/**
 * Where an answer's block stands now: final (at or below the finalized block, and for a block named by hash, seen on
 * the nodes' chain), current (on the chain a routed node serves, not final yet), or unknown (reorged away, too old
 * to check without finality, or never seen). `held` gives the height of a hash on a routed node's recent chain.
 */
export type BlockStanding = "final" | "current" | "unknown";

export function blockStanding(
  block: AnswerBlock,
  finalized: number | undefined,
  held: (hash: string) => number | undefined,
): BlockStanding {
  if (block.hash !== undefined) {
    const number = held(block.hash);
    if (number === undefined) return "unknown";
    return finalized !== undefined && number <= finalized ? "final" : "current";
  }
  return block.number !== undefined && finalized !== undefined && block.number <= finalized
    ? "final"
    : "unknown";
}

interface Entry {
  /** The answer's `result` as JSON text. */
  json: string;
  block: AnswerBlock;
  /** Its block was final when last checked: it stays so, nothing to check again. */
  final: boolean;
}

/** Bytes an entry is charged beyond its key and answer (the map's own bookkeeping). */
const ENTRY_OVERHEAD_BYTES = 128;

/**
 * Answers that cannot change, in process, least recently used first out, bounded in bytes. An entry is served only
 * while its block is final or on the chain the routed nodes serve (`standing`): after a reorg, an answer from the
 * old branch is dropped, never served.
 */
export class ResponseCache {
  private readonly entries: LRUCache<string, Entry>;

  constructor(
    options: { maxBytes: number; maxEntryBytes: number },
    private readonly standing: (block: AnswerBlock) => BlockStanding,
  ) {
    this.entries = new LRUCache<string, Entry>({
      maxSize: options.maxBytes,
      maxEntrySize: Math.min(options.maxEntryBytes, options.maxBytes),
      // Strings are UTF-16 in memory: two bytes a character.
      sizeCalculation: (entry, key) => 2 * (entry.json.length + key.length) + ENTRY_OVERHEAD_BYTES,
    });
  }

  /** The cached result (JSON text), or undefined; an entry whose block no longer stands is dropped. */
  get(key: string): string | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    if (entry.final) return entry.json;
    const standing = this.standing(entry.block);
    if (standing === "unknown") {
      this.entries.delete(key);
      return undefined;
    }
    if (standing === "final") entry.final = true;
    return entry.json;
  }

  /** Keeps a result (JSON text) of the block given, if that block stands now. */
  set(key: string, json: string, block: AnswerBlock): void {
    const standing = this.standing(block);
    if (standing !== "unknown") this.entries.set(key, { json, block, final: standing === "final" });
  }

  get bytes(): number {
    return this.entries.calculatedSize;
  }

  get size(): number {
    return this.entries.size;
  }
}
