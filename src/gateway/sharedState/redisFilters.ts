import type { JsonRpcId, JsonRpcRequest, JsonRpcResponse } from "../../rpc/jsonRpc.js";
import { RPC_ERROR } from "../../rpc/jsonRpc.js";
import { newFilterId } from "../filters/filterId.js";
import type { Filters } from "../filters/filterStore.js";
import { filterNotFound, noPendingFilters } from "../filters/filterStore.js";
import { readNewLogFilter } from "../filters/logFilterParams.js";
import type { LogFilterParams } from "../filters/logFilterParams.js";
import { errorResponse } from "../rpc/parseRequest.js";
import { LUA_NOW } from "./sharedStore.js";
import type { SharedStore } from "./sharedStore.js";

/**
 * Installs a filter if its client holds fewer than ARGV[1] (a lease per filter, scored by expiry, in KEYS[1]): 1
 * installed, 0 at the cap. The filter (KEYS[2]) and its lease expire together unless polled.
 */
const INSTALL = `${LUA_NOW}
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then return 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
redis.call('HSET', KEYS[2], 'client', ARGV[4], 'kind', ARGV[5], 'params', ARGV[6], 'cursor', ARGV[7], 'v', '0')
redis.call('PEXPIRE', KEYS[2], ARGV[3])
return 1`;

/**
 * Moves a filter's cursor (KEYS[1]) if nobody moved it since it was read at version ARGV[1], and keeps the filter
 * and its lease (KEYS[2], member ARGV[4]) for another timeout: 1 moved, -1 moved by another poll meanwhile, 0 gone.
 */
const ADVANCE = `${LUA_NOW}
local v = redis.call('HGET', KEYS[1], 'v')
if not v then return 0 end
if v ~= ARGV[1] then return -1 end
redis.call('HSET', KEYS[1], 'v', tostring(tonumber(v) + 1), 'cursor', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
redis.call('ZADD', KEYS[2], 'XX', now + tonumber(ARGV[3]), ARGV[4])
redis.call('PEXPIRE', KEYS[2], ARGV[3])
return 1`;

/** Removes a filter and its lease: 1 when it existed. */
const UNINSTALL = `redis.call('ZREM', KEYS[2], ARGV[1])
return redis.call('DEL', KEYS[1])`;

declare module "ioredis" {
  interface RedisCommander {
    lightfleetInstallFilter(
      leases: string,
      filter: string,
      max: number,
      id: string,
      ttlMs: number,
      client: string,
      kind: string,
      params: string,
      cursor: string,
    ): Promise<number>;
    lightfleetAdvanceFilter(
      filter: string,
      leases: string,
      version: string,
      cursor: string,
      ttlMs: number,
      id: string,
    ): Promise<number>;
    lightfleetUninstallFilter(filter: string, leases: string, id: string): Promise<number>;
  }
}

const defined = new WeakSet<SharedStore>();

/**
 * A filter call that could not be answered now (the store or the nodes did not answer): -32603, not -32000, which
 * clients read as "filter not found" (viem installs a new filter on it and skips what came meanwhile). The filter is
 * kept as it was, so the next poll delivers everything since the last answered one.
 */
const UNANSWERED = RPC_ERROR.INTERNAL_ERROR;

/** Blocks one poll reads at most (a block filter asks one call per block); a filter further behind catches up over the next polls. */
export const MAX_BLOCKS_PER_POLL = 256;
/** Delivered heads remembered per filter, to find where a reorganisation forked off. */
const RECENT_HEADS = 16;
/** Polls of one filter racing each other: each tries this often before answering "no changes yet". */
const ATTEMPTS = 3;

/** Where a filter stands: the next block to deliver, and the last heads delivered (number, hash). */
interface Cursor {
  next: number;
  recent: Array<[number, string]>;
}

interface Stored {
  client: string;
  kind: "block" | "logs";
  params: Omit<LogFilterParams, "match">;
  cursor: Cursor;
  version: string;
}

export interface RedisFiltersOptions {
  store: SharedStore;
  network: string;
  maxPerClient: number;
  /** A filter not polled for this long expires (in Redis, by its key's TTL). */
  timeoutMs: number;
  /** The head changes are read up to (this replica's served head, or the shared one where its nodes have it). */
  servedHead: () => number | undefined | Promise<number | undefined>;
  /** A call to the network's nodes, routed like a client's (blocks and logs of the filter's range). */
  fetch: (request: JsonRpcRequest) => Promise<JsonRpcResponse>;
  /** Answers eth_getLogs as the gateway does (window rules, routing): eth_getFilterLogs goes through it. */
  getLogs: (request: JsonRpcRequest) => JsonRpcResponse | Promise<JsonRpcResponse>;
}

/** A failure to answer from the nodes or the store: the call is answered with it, the filter left as it was. */
class Unanswered extends Error {}

/**
 * Polled filters kept in Redis, so that every replica answers every call on every filter. A filter is a cursor (the
 * next block to deliver, the last heads delivered), not a buffer: a poll reads the blocks or logs from the cursor up
 * to this replica's served head from the nodes, then moves the cursor with a compare-and-set on the filter's version.
 * Changes come out once and in order whichever replica is polled: two polls racing on one filter cannot both deliver
 * the same blocks (the loser reads again), and a replica behind the cursor answers "no changes yet". After a
 * reorganisation (a remembered head no longer on the chain) delivery resumes from the fork: a block filter gives the
 * new branch's hashes, a logs filter the new branch's logs (logs of dropped blocks are not re-sent with `removed`).
 */
export class RedisFilters implements Filters {
  constructor(private readonly options: RedisFiltersOptions) {
    const { redis } = options.store;
    if (!defined.has(options.store)) {
      defined.add(options.store);
      redis.defineCommand("lightfleetInstallFilter", { numberOfKeys: 2, lua: INSTALL });
      redis.defineCommand("lightfleetAdvanceFilter", { numberOfKeys: 2, lua: ADVANCE });
      redis.defineCommand("lightfleetUninstallFilter", { numberOfKeys: 2, lua: UNINSTALL });
    }
  }

  answerHere(request: JsonRpcRequest, client: string): Promise<JsonRpcResponse> {
    return this.answer(request, client);
  }

  async answer(request: JsonRpcRequest, client: string): Promise<JsonRpcResponse> {
    const id = request.id ?? null;
    const params = Array.isArray(request.params) ? request.params : [];
    try {
      switch (request.method) {
        case "eth_newBlockFilter":
          return await this.install(id, client, "block", { criteria: {} });
        case "eth_newFilter": {
          const parsed = readNewLogFilter(id, params);
          if ("jsonrpc" in parsed) return parsed;
          const { match: _match, ...kept } = parsed;
          return await this.install(id, client, "logs", kept);
        }
        case "eth_newPendingTransactionFilter":
          return noPendingFilters(id);
        case "eth_getFilterChanges":
          return await this.changes(id, params);
        case "eth_getFilterLogs":
          return await this.filterLogs(request, params);
        case "eth_uninstallFilter":
          return await this.uninstall(id, params);
        default:
          return errorResponse(id, RPC_ERROR.METHOD_NOT_FOUND, `the method ${request.method} does not exist`);
      }
    } catch (error) {
      if (error instanceof Unanswered) return errorResponse(id, UNANSWERED, error.message);
      // The store did not answer (down, or slower than its command timeout): said plainly, the filter kept.
      return errorResponse(
        id,
        UNANSWERED,
        "filters are unavailable: the gateway's shared store does not answer; try again shortly",
      );
    }
  }

  /** Filters expire in Redis by themselves. */
  sweep(): void {}

  close(): void {}

  private filterKey(filterId: string): string {
    return `filter:${this.options.network}:${filterId}`;
  }

  private leaseKey(client: string): string {
    return `filters:${this.options.network}:${client}`;
  }

  private async install(
    id: JsonRpcId,
    client: string,
    kind: Stored["kind"],
    params: Stored["params"],
  ): Promise<JsonRpcResponse> {
    const { store, maxPerClient, timeoutMs } = this.options;
    const head = await this.options.servedHead();
    if (head === undefined) throw new Unanswered(`no node available for ${this.options.network}`);
    // Changes start after the head served now; its hash tells a later poll whether the chain reorganised under it.
    const hash = await this.hashAt(head).catch(() => undefined);
    const cursor: Cursor = { next: head + 1, recent: hash ? [[head, hash]] : [] };
    const filterId = newFilterId(0);
    const installed = await store.run("filter", (redis) =>
      redis.lightfleetInstallFilter(
        this.leaseKey(client),
        this.filterKey(filterId),
        maxPerClient,
        filterId,
        timeoutMs,
        client,
        kind,
        JSON.stringify(params),
        JSON.stringify(cursor),
      ),
    );
    if (installed !== 1)
      return errorResponse(
        id,
        RPC_ERROR.LIMIT_EXCEEDED,
        `limit exceeded: at most ${maxPerClient} filters per client; uninstall some or let them expire`,
        { limit: maxPerClient },
      );
    return { jsonrpc: "2.0", id, result: filterId };
  }

  private async changes(id: JsonRpcId, params: unknown[]): Promise<JsonRpcResponse> {
    const filterId = readFilterId(params);
    if (filterId === undefined) return badId(id);
    const { store, timeoutMs } = this.options;
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      const stored = await this.read(filterId);
      if (!stored) return filterNotFound(id);
      const { result, cursor } = await this.readChanges(stored);
      const moved = await store.run("filter", (redis) =>
        redis.lightfleetAdvanceFilter(
          this.filterKey(filterId),
          this.leaseKey(stored.client),
          stored.version,
          JSON.stringify(cursor),
          timeoutMs,
          filterId,
        ),
      );
      if (moved === 1) return { jsonrpc: "2.0", id, result };
      if (moved === 0) return filterNotFound(id);
      // Another poll moved the cursor meanwhile: what was read here may have been delivered there.
    }
    return { jsonrpc: "2.0", id, result: [] };
  }

  /** The changes from the filter's cursor up to this replica's served head, and the cursor after them. */
  private async readChanges(stored: Stored): Promise<{ result: unknown[]; cursor: Cursor }> {
    const head = await this.options.servedHead();
    let { next, recent } = stored.cursor;
    // A replica behind the cursor (its nodes lag) has nothing new to say.
    if (head === undefined || head < next) return { result: [], cursor: stored.cursor };
    // The newest remembered head still on the chain is where delivery resumes (a reorganisation forked after it);
    // with none left, from the oldest one remembered.
    let forked = false;
    while (recent.length > 0) {
      const [number, hash] = recent.at(-1)!;
      if ((await this.hashAt(number)) === hash) break;
      forked = true;
      next = number;
      recent = recent.slice(0, -1);
    }
    if (forked && recent.length > 0) next = recent.at(-1)![0] + 1;
    const to = Math.min(head, next + MAX_BLOCKS_PER_POLL - 1);
    if (stored.kind === "block") {
      const hashes = await Promise.all(
        Array.from({ length: to - next + 1 }, (_, i) => this.hashAt(next + i)),
      );
      const delivered = hashes.map((hash, i): [number, string] => [next + i, hash]);
      return {
        result: hashes,
        cursor: { next: to + 1, recent: [...recent, ...delivered].slice(-RECENT_HEADS) },
      };
    }
    const { criteria, from, to: until } = stored.params;
    const first = Math.max(next, from ?? 0);
    const last = Math.min(to, until ?? Number.MAX_SAFE_INTEGER);
    const [logs, hash] = await Promise.all([
      first <= last
        ? this.call("eth_getLogs", [
            {
              ...(criteria.address !== undefined ? { address: criteria.address } : {}),
              ...(criteria.topics !== undefined ? { topics: criteria.topics } : {}),
              fromBlock: `0x${first.toString(16)}`,
              toBlock: `0x${last.toString(16)}`,
            },
          ])
        : Promise.resolve([]),
      this.hashAt(to),
    ]);
    if (!Array.isArray(logs)) throw new Unanswered("the nodes answered eth_getLogs with no list; poll again");
    // The blocks whose logs went out are remembered with the head: after a reorganisation, delivery resumes after
    // the newest of them still on the chain, so a block between two polls is re-read only if it may have changed.
    const delivered = new Map<number, string>();
    for (const log of logs as Array<{ blockNumber?: unknown; blockHash?: unknown }>)
      if (typeof log.blockNumber === "string" && typeof log.blockHash === "string")
        delivered.set(Number(log.blockNumber), log.blockHash);
    delivered.set(to, hash);
    return {
      result: logs,
      cursor: { next: to + 1, recent: [...recent, ...delivered].slice(-RECENT_HEADS) },
    };
  }

  private async filterLogs(request: JsonRpcRequest, params: unknown[]): Promise<JsonRpcResponse> {
    const id = request.id ?? null;
    const filterId = readFilterId(params);
    if (filterId === undefined) return badId(id);
    const stored = await this.read(filterId);
    if (!stored) return filterNotFound(id);
    if (stored.kind !== "logs")
      return errorResponse(id, RPC_ERROR.INVALID_PARAMS, "invalid params: not a logs filter (eth_newFilter)");
    // Polled: kept for another timeout (a race with a poll that moved the cursor keeps it as well).
    await this.options.store.run("filter", (redis) =>
      redis.lightfleetAdvanceFilter(
        this.filterKey(filterId),
        this.leaseKey(stored.client),
        stored.version,
        JSON.stringify(stored.cursor),
        this.options.timeoutMs,
        filterId,
      ),
    );
    return this.options.getLogs({
      jsonrpc: "2.0",
      id,
      method: "eth_getLogs",
      params: [stored.params.criteria],
    });
  }

  private async uninstall(id: JsonRpcId, params: unknown[]): Promise<JsonRpcResponse> {
    const filterId = readFilterId(params);
    if (filterId === undefined) return badId(id);
    const stored = await this.read(filterId);
    if (!stored) return { jsonrpc: "2.0", id, result: false };
    const removed = await this.options.store.run("filter", (redis) =>
      redis.lightfleetUninstallFilter(this.filterKey(filterId), this.leaseKey(stored.client), filterId),
    );
    return { jsonrpc: "2.0", id, result: removed === 1 };
  }

  private async read(filterId: string): Promise<Stored | undefined> {
    const fields = await this.options.store.run("filter", (redis) => redis.hgetall(this.filterKey(filterId)));
    if (fields.v === undefined || fields.cursor === undefined || fields.client === undefined)
      return undefined;
    return {
      client: fields.client,
      kind: fields.kind === "logs" ? "logs" : "block",
      params: JSON.parse(fields.params ?? "{}") as Stored["params"],
      cursor: JSON.parse(fields.cursor) as Cursor,
      version: fields.v,
    };
  }

  /** The hash of the block at `number` on the chain the nodes serve. */
  private async hashAt(number: number): Promise<string> {
    const block = (await this.call("eth_getBlockByNumber", [`0x${number.toString(16)}`, false])) as {
      hash?: unknown;
    } | null;
    if (typeof block?.hash !== "string")
      throw new Unanswered(`the nodes do not have block ${number} yet; poll again`);
    return block.hash;
  }

  private async call(method: string, params: unknown[]): Promise<unknown> {
    const response = await this.options.fetch({ jsonrpc: "2.0", id: 1, method, params });
    if ("error" in response)
      throw new Unanswered(
        `the nodes could not answer ${method} for this filter (${response.error.message}); poll again`,
      );
    return response.result;
  }
}

function readFilterId(params: unknown[]): string | undefined {
  const id = params[0];
  return params.length === 1 && typeof id === "string" && /^0x[0-9a-f]{1,64}$/i.test(id)
    ? id.toLowerCase()
    : undefined;
}

function badId(id: JsonRpcRequest["id"]): JsonRpcResponse {
  return errorResponse(id ?? null, RPC_ERROR.INVALID_PARAMS, "invalid params: expected one filter id");
}
