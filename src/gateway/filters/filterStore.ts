import type { JsonRpcRequest, JsonRpcResponse } from "../../rpc/jsonRpc.js";
import { RPC_ERROR } from "../../rpc/jsonRpc.js";
import { errorResponse } from "../rpc/parseRequest.js";
import type { ConnectionCap } from "../limits/connectionCap.js";
import { ConnectionCounts } from "../limits/connectionCap.js";
import type { FeedBlock } from "../ws/headFeed.js";
import type { Log, LogFilter } from "../ws/logFilter.js";
import { matchesFilter } from "../ws/logFilter.js";
import type { StreamListener } from "../ws/networkStreams.js";
import { filterOwner, newFilterId } from "./filterId.js";
import { readNewLogFilter } from "./logFilterParams.js";

/** geth's answer for a filter it does not have (never made, uninstalled or expired); clients know it. */
const FILTER_NOT_FOUND = -32000;

export function filterNotFound(id: JsonRpcRequest["id"]): JsonRpcResponse {
  return errorResponse(id ?? null, FILTER_NOT_FOUND, "filter not found");
}

/** The answer to eth_newPendingTransactionFilter: the gateway serves no pending transactions. */
export function noPendingFilters(id: JsonRpcRequest["id"]): JsonRpcResponse {
  return errorResponse(
    id ?? null,
    RPC_ERROR.METHOD_NOT_FOUND,
    "eth_newPendingTransactionFilter is not available on this endpoint: it serves no pending transactions " +
      "(use eth_newBlockFilter, or eth_subscribe newHeads over /ws)",
  );
}

/** What the gateway and its call handler ask of its filters, kept here or in the shared store. */
export interface Filters {
  /** Answers one filter call for the client at `client` (its address). */
  answer(request: JsonRpcRequest, client: string): JsonRpcResponse | Promise<JsonRpcResponse>;
  /** Answers a call forwarded by another worker (never sent on again). */
  answerHere(request: JsonRpcRequest, client: string): JsonRpcResponse | Promise<JsonRpcResponse>;
  /** Removes filters not polled within the timeout (where nothing expires them by itself). */
  sweep(): void;
  close(): void;
}

/** The methods that name a filter by its id: with gateway workers, answered by the worker holding it. */
const BY_ID = new Set(["eth_getFilterChanges", "eth_getFilterLogs", "eth_uninstallFilter"]);

/**
 * Each client address's count of filters, up to its limit: the same counting as the WebSocket connection cap, kept
 * here or, with gateway workers, by the primary for all of them (acquire is then a promise).
 */
export type FilterQuota = ConnectionCap;

/** Filters kept at most over all clients, whatever the per-client limit: memory stays bounded. */
const MAX_FILTERS = 100_000;

/** Block hashes or logs one filter holds between polls; beyond, the oldest go and the next poll says so. */
export const MAX_BUFFERED = 10_000;

export interface FilterStoreOptions {
  /** The network's shared head and logs streams. */
  streams: { add(listener: StreamListener): () => void };
  /** Answers eth_getLogs as the gateway does (window rules, routing): eth_getFilterLogs goes through it. */
  getLogs: (request: JsonRpcRequest) => JsonRpcResponse | Promise<JsonRpcResponse>;
  /** Filters one client address may hold. */
  maxPerClient: number;
  /** A filter not polled for this long is removed (geth: 5 minutes). */
  timeoutMs: number;
  now?: () => number;
  /** Counts the filters of each client; by default here, `maxPerClient` each. */
  quota?: FilterQuota;
  /** The gateway worker this store belongs to, named in its filter ids (0 without workers). */
  owner?: number;
  /**
   * Answers a call on another worker's filter by that worker (through the cluster primary). Without it, every id is
   * looked up here.
   */
  forward?: (owner: number, request: JsonRpcRequest, client: string) => Promise<JsonRpcResponse>;
}

interface FilterBase {
  client: string;
  polledAt: number;
  /** Buffered items were dropped since the last poll (the client polled too seldom). */
  overflowed: boolean;
}

type Filter =
  | (FilterBase & { kind: "block"; hashes: string[] })
  | (FilterBase & {
      kind: "logs";
      /** The filter object as the client gave it (for eth_getFilterLogs). */
      criteria: Record<string, unknown>;
      match: LogFilter;
      /** Heights a numeric fromBlock/toBlock bounds the changes to. */
      from?: number;
      to?: number;
      logs: Log[];
    });

/**
 * Polled filters (eth_newFilter, eth_newBlockFilter, eth_getFilterChanges, ...) served by the gateway from its own
 * head and logs streams, not by a node: a filter lives as long as the gateway, whichever node fails or restarts. Each
 * client address holds at most `maxPerClient`; a filter not polled within `timeoutMs` is removed, as geth does.
 *
 * With gateway workers, a filter stays with the worker that made it and its id names that worker: a call on it that
 * lands on another worker (a client polling over fresh connections) is forwarded there and answered with the owner's
 * reply. Forwarding rather than sharing the filters keeps the single-process path as it was (no IPC, no copies of
 * every block's changes to every worker): only the calls that land elsewhere cost one hop through the primary.
 */
export class FilterStore implements Filters {
  private readonly filters = new Map<string, Filter>();
  private readonly unlisten: () => void;
  private readonly now: () => number;
  private readonly quota: FilterQuota;
  private readonly owner: number;
  private closed = false;
  /** Logs are added in block order, each block after the previous one's logs came. */
  private queue: Promise<void> = Promise.resolve();
  private logFilters = 0;
  private sweptAt = 0;

  constructor(private readonly options: FilterStoreOptions) {
    this.now = options.now ?? Date.now;
    this.quota = options.quota ?? new ConnectionCounts(options.maxPerClient);
    this.owner = options.owner ?? 0;
    this.unlisten = options.streams.add({
      onBlock: (block, logs) => this.onBlock(block, logs),
      onRemoved: (block, logs) => this.onRemoved(block, logs),
    });
  }

  get size(): number {
    return this.filters.size;
  }

  /** The filters go with the store (with workers, the primary forgets a worker's counts when it exits). */
  close(): void {
    this.closed = true;
    this.unlisten();
    this.filters.clear();
  }

  /** Removes filters not polled within the timeout. */
  sweep(): void {
    const now = this.now();
    this.sweptAt = now;
    for (const [id, filter] of this.filters)
      if (now - filter.polledAt > this.options.timeoutMs) this.remove(id);
  }

  /** Answers one filter call for the client at `client` (its address), here or by the worker holding the filter. */
  answer(request: JsonRpcRequest, client: string): JsonRpcResponse | Promise<JsonRpcResponse> {
    if (this.options.forward && BY_ID.has(request.method)) {
      const filterId = this.filterId(Array.isArray(request.params) ? request.params : []);
      const owner = filterId === undefined ? undefined : filterOwner(filterId);
      if (owner !== undefined && owner !== this.owner) return this.options.forward(owner, request, client);
    }
    return this.answerHere(request, client);
  }

  /** Answers one filter call from this store's filters (a call forwarded by another worker: never sent on again). */
  answerHere(request: JsonRpcRequest, client: string): JsonRpcResponse | Promise<JsonRpcResponse> {
    if (this.now() - this.sweptAt >= 1_000) this.sweep();
    const id = request.id ?? null;
    const params = Array.isArray(request.params) ? request.params : [];
    switch (request.method) {
      case "eth_newBlockFilter":
        return this.install(id, client, { kind: "block", hashes: [] });
      case "eth_newFilter":
        return this.newLogFilter(id, client, params);
      case "eth_newPendingTransactionFilter":
        return noPendingFilters(id);
      case "eth_getFilterChanges":
        return this.changes(id, params);
      case "eth_getFilterLogs":
        return this.filterLogs(request, params);
      case "eth_uninstallFilter": {
        const filterId = this.filterId(params);
        if (filterId === undefined) return this.badId(id);
        const existed = this.filters.has(filterId);
        this.remove(filterId);
        return { jsonrpc: "2.0", id, result: existed };
      }
      default:
        return errorResponse(id, RPC_ERROR.METHOD_NOT_FOUND, `the method ${request.method} does not exist`);
    }
  }

  private newLogFilter(
    id: JsonRpcRequest["id"],
    client: string,
    params: unknown[],
  ): JsonRpcResponse | Promise<JsonRpcResponse> {
    const parsed = readNewLogFilter(id, params);
    if ("jsonrpc" in parsed) return parsed;
    return this.install(id ?? null, client, { kind: "logs", ...parsed, logs: [] });
  }

  private install(
    id: JsonRpcRequest["id"],
    client: string,
    filter: NewFilter,
  ): JsonRpcResponse | Promise<JsonRpcResponse> {
    if (this.filters.size >= MAX_FILTERS) return this.tooMany(id);
    const granted = this.quota.acquire(client);
    return granted instanceof Promise
      ? granted.then((ok) => this.installGranted(id, client, filter, ok))
      : this.installGranted(id, client, filter, granted);
  }

  private installGranted(
    id: JsonRpcRequest["id"],
    client: string,
    filter: NewFilter,
    granted: boolean,
  ): JsonRpcResponse {
    if (!granted)
      return errorResponse(
        id ?? null,
        RPC_ERROR.LIMIT_EXCEEDED,
        `limit exceeded: at most ${this.options.maxPerClient} filters per client; uninstall some or let them expire`,
        { limit: this.options.maxPerClient },
      );
    // While the primary counted, the store may have filled up or closed.
    if (this.closed || this.filters.size >= MAX_FILTERS) {
      this.quota.release(client);
      return this.tooMany(id);
    }
    const filterId = newFilterId(this.owner);
    this.filters.set(filterId, { ...filter, client, polledAt: this.now(), overflowed: false } as Filter);
    if (filter.kind === "logs") this.logFilters++;
    return { jsonrpc: "2.0", id: id ?? null, result: filterId };
  }

  private tooMany(id: JsonRpcRequest["id"]): JsonRpcResponse {
    const message = "limit exceeded: too many filters on this endpoint";
    return errorResponse(id ?? null, RPC_ERROR.LIMIT_EXCEEDED, message, { limit: this.options.maxPerClient });
  }

  private changes(id: JsonRpcRequest["id"], params: unknown[]): JsonRpcResponse {
    const filterId = this.filterId(params);
    if (filterId === undefined) return this.badId(id);
    const filter = this.filters.get(filterId);
    if (!filter) return this.notFound(id);
    filter.polledAt = this.now();
    if (filter.overflowed) {
      filter.overflowed = false;
      // Dropped items must not pass unnoticed: the client is told, and gets what was kept at its next poll.
      return errorResponse(
        id ?? null,
        RPC_ERROR.LIMIT_EXCEEDED,
        `limit exceeded: more than ${MAX_BUFFERED} changes since the last poll; the oldest were dropped (poll more often, or use eth_getLogs)`,
        { limit: MAX_BUFFERED },
      );
    }
    if (filter.kind === "block") {
      const hashes = filter.hashes;
      filter.hashes = [];
      return { jsonrpc: "2.0", id: id ?? null, result: hashes };
    }
    const logs = filter.logs;
    filter.logs = [];
    return { jsonrpc: "2.0", id: id ?? null, result: logs };
  }

  private filterLogs(request: JsonRpcRequest, params: unknown[]): JsonRpcResponse | Promise<JsonRpcResponse> {
    const id = request.id ?? null;
    const filterId = this.filterId(params);
    if (filterId === undefined) return this.badId(id);
    const filter = this.filters.get(filterId);
    if (!filter) return this.notFound(id);
    filter.polledAt = this.now();
    if (filter.kind !== "logs")
      return errorResponse(id, RPC_ERROR.INVALID_PARAMS, "invalid params: not a logs filter (eth_newFilter)");
    // The logs the filter's criteria select now, with eth_getLogs' rules (its window included).
    return this.options.getLogs({ jsonrpc: "2.0", id, method: "eth_getLogs", params: [filter.criteria] });
  }

  private filterId(params: unknown[]): string | undefined {
    const id = params[0];
    return params.length === 1 && typeof id === "string" && /^0x[0-9a-f]{1,64}$/i.test(id)
      ? id.toLowerCase()
      : undefined;
  }

  private badId(id: JsonRpcRequest["id"]): JsonRpcResponse {
    return errorResponse(id ?? null, RPC_ERROR.INVALID_PARAMS, "invalid params: expected one filter id");
  }

  private notFound(id: JsonRpcRequest["id"]): JsonRpcResponse {
    return filterNotFound(id);
  }

  private remove(filterId: string): void {
    const filter = this.filters.get(filterId);
    if (!filter) return;
    this.filters.delete(filterId);
    if (filter.kind === "logs") this.logFilters--;
    this.quota.release(filter.client);
  }

  private onBlock(block: FeedBlock, logs: () => Promise<Log[]>): void {
    for (const filter of this.filters.values())
      if (filter.kind === "block") push(filter, filter.hashes, block.hash);
    // The block's logs are fetched only while some logs filter wants them.
    if (this.logFilters > 0) this.enqueue(async () => this.addLogs(block.number, await logs(), false));
  }

  private onRemoved(block: FeedBlock, logs: Promise<Log[]>): void {
    if (this.logFilters > 0) this.enqueue(async () => this.addLogs(block.number, await logs, true));
  }

  private addLogs(number: number, logs: Log[], removed: boolean): void {
    for (const filter of this.filters.values()) {
      if (filter.kind !== "logs") continue;
      if (
        (filter.from !== undefined && number < filter.from) ||
        (filter.to !== undefined && number > filter.to)
      )
        continue;
      for (const log of logs)
        if (matchesFilter(log, filter.match))
          push(filter, filter.logs, removed ? { ...log, removed: true } : log);
    }
  }

  private enqueue(task: () => Promise<void>): void {
    this.queue = this.queue.then(task).catch(() => undefined);
  }
}

/** A filter as made, before it is installed. */
type NewFilter =
  { kind: "block"; hashes: string[] } | Omit<Extract<Filter, { kind: "logs" }>, keyof FilterBase>;

/** Buffers one change, dropping the oldest beyond MAX_BUFFERED (and marking the filter so its next poll says so). */
function push<T>(filter: FilterBase, buffer: T[], item: T): void {
  buffer.push(item);
  if (buffer.length > MAX_BUFFERED) {
    buffer.shift();
    filter.overflowed = true;
  }
}
