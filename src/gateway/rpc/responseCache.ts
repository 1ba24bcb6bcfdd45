import { LRUCache } from "lru-cache";
import type { JsonRpcRequest } from "../../rpc/jsonRpc.js";
import { blockHashParamIndex, blockParamIndex, readBlockHash, readBlockParam } from "./blockParams.js";
import { keptResult, paramsJson } from "./serialize.js";
import type { RawResult } from "./serialize.js";

/** The block an answer belongs to: it may be served again while that block is final or on the nodes' chain. */
export interface AnswerBlock {
  number?: number;
  hash?: string;
}

/**
 * A call named by a hash parameter, as a hit looks it up: that parameter as the client wrote it, the method, and the
 * other parameters' JSON with the hash left out. Equal look-ups mean equal keys (the hash's place is the method's).
 */
export interface HashLookup {
  hash: string;
  method: string;
  rest: string;
  /** The hash parameter's index, and the parameters' values (a final entry is found by them, see `finalHit`). */
  at: number;
  params: readonly unknown[];
}

/**
 * How a call may be cached: its key, and the block its answer belongs to, or "inResult" when the answer names it
 * (a transaction or receipt by hash: its blockHash and blockNumber). The key is written only when asked for (a miss):
 * a call named by a hash is looked up by `lookup`, whose hash was read while planning, not by a new ~95-character key
 * that the cache's map would have to hash and compare on every hit.
 */
export class CachePlan {
  private text: string | undefined;

  constructor(
    private readonly forwarded: JsonRpcRequest,
    readonly block: AnswerBlock | "inResult",
    /** The index of a parameter read as a block hash (hex digits, written as they are), not scanned again. */
    private readonly hashAt = -1,
    readonly lookup?: HashLookup,
  ) {}

  get key(): string {
    return (this.text ??= `${this.forwarded.method}\n${paramsJson(this.forwarded.params, this.hashAt)}`);
  }

  /** The call's parameters as the client wrote them (a call with a look-up goes to the node as it came). */
  get params(): unknown {
    return this.forwarded.params;
  }
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
  // The key is written only for a call that may be cached: most calls naming a block name one not final yet.
  if (BY_TRANSACTION_HASH.has(original.method))
    return readBlockHash(params[0]) && params.length === 1
      ? keyed(forwarded, "inResult", hashAt(original, forwarded, 0))
      : undefined;
  const hashIndex = blockHashParamIndex(original.method);
  if (hashIndex !== undefined) {
    const hash = readBlockHash(params[hashIndex]);
    return hash ? keyed(forwarded, { hash }, hashAt(original, forwarded, hashIndex)) : undefined;
  }
  const index = blockParamIndex(original.method);
  // An absent block parameter means latest.
  if (index === undefined || params[index] === undefined) return undefined;
  // The served head stands in for latest: any number will do, since tags are refused below.
  const target = readBlockParam(params[index], Number.MAX_SAFE_INTEGER);
  if (target.kind === "hash")
    return keyed(
      forwarded,
      { hash: target.hash },
      // As a string (not EIP-1898's object), it is looked up by it.
      typeof params[index] === "string" ? hashAt(original, forwarded, index) : -1,
    );
  if (target.kind !== "number" || isLatest(params[index])) return undefined;
  return finalized !== undefined && target.number <= finalized
    ? keyed(forwarded, { number: target.number })
    : undefined;
}

/**
 * A cacheable call's plan: its key is the call as it goes to the node. `hashAt`: the index of a parameter read as a
 * block hash (hex digits, which JSON writes as they are), not scanned again; such a call is looked up by it.
 */
function keyed(forwarded: JsonRpcRequest, block: CachePlan["block"], hashAt = -1): CachePlan {
  if (hashAt < 0) return new CachePlan(forwarded, block);
  const params = forwarded.params as unknown[];
  const lookup = {
    hash: params[hashAt] as string,
    method: forwarded.method,
    rest: paramsJson(params, hashAt, true),
    at: hashAt,
    params,
  };
  return new CachePlan(forwarded, block, hashAt, lookup);
}

/** The index of the hash read from the client's params, when they go to the node as they are. */
const hashAt = (original: JsonRpcRequest, forwarded: JsonRpcRequest, index: number) =>
  forwarded.params === original.params ? index : -1;

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
 * The block an answer names, with its height read from the answer when the call named only its hash: a block's own
 * `number` (eth_getBlockByHash), or the `blockNumber` of a transaction or receipt in it. The height is what lets a
 * block older than the nodes' recent chains be checked against the canonical hash at that height. Pure.
 */
export function withNumberFromAnswer(block: AnswerBlock, result: unknown): AnswerBlock {
  if (block.hash === undefined || block.number !== undefined) return block;
  const item = (Array.isArray(result) ? result[0] : result) as Record<string, unknown> | null | undefined;
  if (typeof item !== "object" || item === null) return block;
  const quantity =
    readBlockHash(item.hash) === block.hash && "number" in item && !("blockHash" in item)
      ? item.number
      : readBlockHash(item.blockHash) === block.hash
        ? item.blockNumber
        : undefined;
  if (typeof quantity !== "string" || !/^0x[0-9a-f]{1,13}$/i.test(quantity)) return block;
  return { hash: block.hash, number: Number.parseInt(quantity, 16) };
}

/**
 * Where an answer's block stands now: final (at or below the finalized block, and for a block named by hash, seen on
 * the nodes' chain or matching the canonical hash at its height), current (on the chain a routed node serves, not
 * final yet), unverified (a hash at a final height off the recent chains whose canonical hash is not known yet: kept,
 * not served, until it is), or unknown (reorged away, not the canonical hash at its height, too old to check without
 * finality, or never seen). `held` gives the height of a hash on a routed node's recent chain, `canonical` the known
 * canonical hash at a final height (they never change).
 */
export type BlockStanding = "final" | "current" | "unverified" | "unknown";

export function blockStanding(
  block: AnswerBlock,
  finalized: number | undefined,
  held: (hash: string) => number | undefined,
  canonical: (number: number) => string | undefined,
): BlockStanding {
  if (block.hash !== undefined) {
    const number = held(block.hash);
    if (number !== undefined) return finalized !== undefined && number <= finalized ? "final" : "current";
    // Off the recent chains: only a final height's canonical hash can say the block is the chain's.
    if (block.number === undefined || finalized === undefined || block.number > finalized) return "unknown";
    const hash = canonical(block.number);
    if (hash === undefined) return "unverified";
    return hash === block.hash ? "final" : "unknown";
  }
  return block.number !== undefined && finalized !== undefined && block.number <= finalized
    ? "final"
    : "unknown";
}

interface Entry {
  /** The answer's `result` as JSON text. */
  json: string;
  /** The same, as every hit answers it (known to be ASCII or not). */
  result: RawResult;
  block: AnswerBlock;
  /** Its block was final when last checked: it stays so, nothing to check again. */
  final: boolean;
  /** Its key in the map (the same string: looked up again by it, its hash is already computed). */
  key: string;
  lookup: HashLookup | undefined;
  /** The parameters' values of the call kept, for `finalHit` (none without a look-up). */
  params: readonly unknown[] | undefined;
}

/**
 * Whether two calls' parameters are the same values, compared as strings, numbers, booleans and null are (an object
 * parameter never is the same: such a call is found by its key), but for the one at `skip` (compared already).
 */
function sameValues(kept: readonly unknown[], params: readonly unknown[], skip = -1): boolean {
  if (kept.length !== params.length) return false;
  for (let i = 0; i < params.length; i++) if (i !== skip && params[i] !== kept[i]) return false;
  return true;
}

/**
 * The hash index's key for a hash: its last seven characters' low four bits, a number (a small integer, which a map
 * hashes at once, where it would hash all 66 characters of a string the client's call made new). Hashes that share
 * it are told apart by the hash itself; any string has one.
 */
export function hashKey(hash: string): number {
  let key = 0;
  for (let i = hash.length - 7; i < hash.length; i++) key = (key << 4) | (hash.charCodeAt(i) & 15);
  return key;
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
  /** Entries kept with a HashLookup, by its hash's key (hashKey): each leaves this index as it leaves the map. */
  private readonly byHash = new Map<number, Entry[]>();
  /** The index of the hash parameter of each method kept with a look-up (see `finalHit`). */
  private readonly hashAt = new Map<string, number>();
  /** The entry `finalHit` answered last. */
  private lastHit: Entry | undefined = undefined;

  /**
   * `becameFinal` is told of an entry kept before its block was known final, once it is (an entry final when kept is
   * told by `set`'s result).
   */
  constructor(
    options: { maxBytes: number; maxEntryBytes: number },
    private readonly standing: (block: AnswerBlock) => BlockStanding,
    private readonly becameFinal?: (key: string, json: string, block: AnswerBlock) => void,
  ) {
    this.entries = new LRUCache<string, Entry>({
      maxSize: options.maxBytes,
      maxEntrySize: Math.min(options.maxEntryBytes, options.maxBytes),
      // Strings are UTF-16 in memory: two bytes a character.
      sizeCalculation: (entry, key) => 2 * (entry.json.length + key.length) + ENTRY_OVERHEAD_BYTES,
      // Evicted, deleted or replaced: out of the hash index too.
      dispose: (entry) => this.unindex(entry),
    });
  }

  /**
   * The cached result (JSON text), or undefined; an entry whose block no longer stands is dropped, one not verified
   * yet is kept but not served.
   */
  get(key: string): string | undefined {
    return this.served(key)?.json;
  }

  /** The cached result as an answer's result (see get), the same object on every hit. */
  getResult(key: string): RawResult | undefined {
    return this.served(key)?.result;
  }

  /**
   * The cached result for a plan (see get): a call named by a hash is found by its lookup, then its entry is read from
   * the map by the entry's own key (its recency kept as a look-up by key keeps it).
   */
  find(plan: CachePlan): RawResult | undefined {
    const lookup = plan.lookup;
    if (lookup === undefined) return this.served(plan.key)?.result;
    const kept = this.byHash.get(hashKey(lookup.hash));
    if (kept === undefined) return undefined;
    for (let i = 0; i < kept.length; i++) {
      const entry = kept[i]!;
      const other = entry.lookup!;
      if (other.hash !== lookup.hash || other.method !== lookup.method || other.rest !== lookup.rest)
        continue;
      return this.served(entry.key)?.result;
    }
    return undefined;
  }

  /**
   * The result of a call naming a final entry by its hash parameter, with the same method and the same parameter
   * values as the call kept (a client asking for finalized blocks or receipts by hash, again and again), while that
   * entry is kept (its recency renewed as any hit's); else undefined. Such a call would be planned, keyed and found to
   * the same entry: a final answer named by a hash depends on nothing else (not the head, not the finalized height),
   * so it is answered here with none of that work. An entry not final yet is left to `find`, which checks its block.
   */
  finalHit(request: JsonRpcRequest): RawResult | undefined {
    const method = request.method;
    const params = request.params;
    if (!Array.isArray(params)) return undefined;
    // The same call as the last one answered here (a poller): compared, where the maps would hash its new strings.
    const last = this.lastHit;
    if (last !== undefined && method === last.lookup!.method && sameValues(last.params!, params)) {
      if (this.entries.get(last.key) === last) return last.result;
      this.lastHit = undefined;
    }
    const at = this.hashAt.get(method);
    if (at === undefined) return undefined;
    const hash: unknown = params[at];
    if (typeof hash !== "string") return undefined;
    const kept = this.byHash.get(hashKey(hash));
    if (kept === undefined) return undefined;
    for (let i = 0; i < kept.length; i++) {
      const entry = kept[i]!;
      const other = entry.lookup!;
      // The hash parameter is compared first, then skipped among the others.
      if (
        !entry.final ||
        other.hash !== hash ||
        other.method !== method ||
        !sameValues(entry.params!, params, at)
      )
        continue;
      // Through the map, for its recency; an entry in the index is in the map.
      if (this.entries.get(entry.key) !== entry) return undefined;
      this.lastHit = entry;
      return entry.result;
    }
    return undefined;
  }

  private served(key: string): Entry | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    if (entry.final) return entry;
    const standing = this.standing(entry.block);
    if (standing === "unverified") return undefined;
    if (standing === "unknown") {
      this.entries.delete(key);
      return undefined;
    }
    if (standing === "final") {
      entry.final = true;
      this.becameFinal?.(key, entry.json, entry.block);
    }
    return entry;
  }

  /**
   * Keeps a result (JSON text) of the block given, if that block stands now or may once verified; returns where the
   * block stands (only an answer about a final block may be shared with other replicas, or served from them).
   */
  set(key: string, json: string, block: AnswerBlock, lookup?: HashLookup): BlockStanding {
    const standing = this.standing(block);
    if (standing === "unknown") return standing;
    const entry: Entry = {
      json,
      result: keptResult(json),
      block,
      final: standing === "final",
      key,
      lookup,
      params: lookup?.params.slice(),
    };
    this.entries.set(key, entry);
    // Not kept when larger than an entry may be.
    if (lookup !== undefined && this.entries.peek(key) === entry) {
      this.hashAt.set(lookup.method, lookup.at);
      const key = hashKey(lookup.hash);
      const kept = this.byHash.get(key);
      if (kept === undefined) this.byHash.set(key, [entry]);
      else kept.push(entry);
    }
    return standing;
  }

  private unindex(entry: Entry): void {
    if (entry.lookup === undefined) return;
    const key = hashKey(entry.lookup.hash);
    const kept = this.byHash.get(key);
    const at = kept?.indexOf(entry) ?? -1;
    if (at < 0) return;
    if (kept!.length === 1) this.byHash.delete(key);
    else kept!.splice(at, 1);
  }

  /** Whether an entry is kept under `key` (one larger than `maxEntryBytes` never is); its recency is left as it was. */
  holds(key: string): boolean {
    return this.entries.has(key);
  }

  get bytes(): number {
    return this.entries.calculatedSize;
  }

  get size(): number {
    return this.entries.size;
  }

  /** How many entries the hash index holds (each kept entry with a look-up, no more). */
  get looksUp(): number {
    let n = 0;
    for (const kept of this.byHash.values()) n += kept.length;
    return n;
  }
}
