import { randomBytes } from "node:crypto";
import type { JsonRpcRequest, JsonRpcResponse } from "../../rpc/jsonRpc.js";
import { RPC_ERROR } from "../../rpc/jsonRpc.js";
import { readBlockParam } from "../rpc/blockParams.js";
import { errorResponse } from "../rpc/parseRequest.js";
import type { FeedBlock } from "../ws/headFeed.js";
import type { Log, LogFilter } from "../ws/logFilter.js";
import { matchesFilter, parseLogFilter } from "../ws/logFilter.js";
import type { StreamListener } from "../ws/networkStreams.js";

/** The filter methods the gateway serves itself. */
export const FILTER_METHODS = new Set([
  "eth_newFilter",
  "eth_newBlockFilter",
  "eth_newPendingTransactionFilter",
  "eth_getFilterChanges",
  "eth_getFilterLogs",
  "eth_uninstallFilter",
]);

/** geth's answer for a filter it does not have (never made, uninstalled or expired); clients know it. */
const FILTER_NOT_FOUND = -32000;

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
 */
export class FilterStore {
  private readonly filters = new Map<string, Filter>();
  private readonly perClient = new Map<string, number>();
  private readonly unlisten: () => void;
  private readonly now: () => number;
  /** Logs are added in block order, each block after the previous one's logs came. */
  private queue: Promise<void> = Promise.resolve();
  private logFilters = 0;
  private sweptAt = 0;

  constructor(private readonly options: FilterStoreOptions) {
    this.now = options.now ?? Date.now;
    this.unlisten = options.streams.add({
      onBlock: (block, logs) => this.onBlock(block, logs),
      onRemoved: (block, logs) => this.onRemoved(block, logs),
    });
  }

  get size(): number {
    return this.filters.size;
  }

  close(): void {
    this.unlisten();
    this.filters.clear();
    this.perClient.clear();
  }

  /** Removes filters not polled within the timeout. */
  sweep(): void {
    const now = this.now();
    this.sweptAt = now;
    for (const [id, filter] of this.filters)
      if (now - filter.polledAt > this.options.timeoutMs) this.remove(id);
  }

  /** Answers one filter call for the client at `client` (its address). */
  answer(request: JsonRpcRequest, client: string): JsonRpcResponse | Promise<JsonRpcResponse> {
    if (this.now() - this.sweptAt >= 1_000) this.sweep();
    const id = request.id ?? null;
    const params = Array.isArray(request.params) ? request.params : [];
    switch (request.method) {
      case "eth_newBlockFilter":
        return this.install(id, client, { kind: "block", hashes: [] });
      case "eth_newFilter":
        return this.newLogFilter(id, client, params);
      case "eth_newPendingTransactionFilter":
        return errorResponse(
          id,
          RPC_ERROR.METHOD_NOT_FOUND,
          "eth_newPendingTransactionFilter is not available on this endpoint: it serves no pending transactions " +
            "(use eth_newBlockFilter, or eth_subscribe newHeads over /ws)",
        );
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

  private newLogFilter(id: JsonRpcRequest["id"], client: string, params: unknown[]): JsonRpcResponse {
    const invalid = (message: string) =>
      errorResponse(id ?? null, RPC_ERROR.INVALID_PARAMS, `invalid params: ${message}`);
    const criteria = params[0] ?? {};
    if (params.length > 1 || !criteria || typeof criteria !== "object" || Array.isArray(criteria))
      return invalid("eth_newFilter takes one filter object");
    const c = criteria as Record<string, unknown>;
    if (c.blockHash !== undefined)
      return invalid("a filter follows new blocks: blockHash is for eth_getLogs");
    const match = parseLogFilter({ address: c.address, topics: c.topics });
    if (typeof match === "string") return invalid(match);
    const bound = (value: unknown, name: string): number | undefined | string => {
      if (value === undefined || value === null) return undefined;
      const target = readBlockParam(value, Number.MAX_SAFE_INTEGER);
      if (target.kind === "tag") return undefined;
      if (target.kind !== "number" || value === "latest")
        return value === "latest" ? undefined : `${name} must be a block number or tag`;
      return target.number;
    };
    const from = bound(c.fromBlock, "fromBlock");
    const to = bound(c.toBlock, "toBlock");
    if (typeof from === "string") return invalid(from);
    if (typeof to === "string") return invalid(to);
    return this.install(id ?? null, client, {
      kind: "logs",
      criteria: c,
      match,
      ...(from !== undefined ? { from } : {}),
      ...(to !== undefined ? { to } : {}),
      logs: [],
    });
  }

  private install(
    id: JsonRpcRequest["id"],
    client: string,
    filter: { kind: "block"; hashes: string[] } | Omit<Extract<Filter, { kind: "logs" }>, keyof FilterBase>,
  ): JsonRpcResponse {
    const held = this.perClient.get(client) ?? 0;
    if (held >= this.options.maxPerClient || this.filters.size >= MAX_FILTERS)
      return errorResponse(
        id ?? null,
        RPC_ERROR.LIMIT_EXCEEDED,
        held >= this.options.maxPerClient
          ? `limit exceeded: at most ${this.options.maxPerClient} filters per client; uninstall some or let them expire`
          : "limit exceeded: too many filters on this endpoint",
        { limit: this.options.maxPerClient },
      );
    const filterId = `0x${randomBytes(16).toString("hex")}`;
    this.filters.set(filterId, { ...filter, client, polledAt: this.now(), overflowed: false } as Filter);
    this.perClient.set(client, held + 1);
    if (filter.kind === "logs") this.logFilters++;
    return { jsonrpc: "2.0", id: id ?? null, result: filterId };
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
    return errorResponse(id ?? null, FILTER_NOT_FOUND, "filter not found");
  }

  private remove(filterId: string): void {
    const filter = this.filters.get(filterId);
    if (!filter) return;
    this.filters.delete(filterId);
    if (filter.kind === "logs") this.logFilters--;
    const held = (this.perClient.get(filter.client) ?? 1) - 1;
    if (held > 0) this.perClient.set(filter.client, held);
    else this.perClient.delete(filter.client);
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

/** Buffers one change, dropping the oldest beyond MAX_BUFFERED (and marking the filter so its next poll says so). */
function push<T>(filter: FilterBase, buffer: T[], item: T): void {
  buffer.push(item);
  if (buffer.length > MAX_BUFFERED) {
    buffer.shift();
    filter.overflowed = true;
  }
}
