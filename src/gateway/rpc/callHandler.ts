import type { Logger } from "../../log/logger.js";
import type { GatewayMetrics, GatewayOutcome } from "../../metrics/gatewayMetrics.js";
import type { CountCell } from "../../metrics/pendingCounts.js";
import { toQuantity } from "../../rpc/blocks.js";
import type { JsonRpcRequest, JsonRpcResponse } from "../../rpc/jsonRpc.js";
import { RPC_ERROR, RpcTransportError } from "../../rpc/jsonRpc.js";
import type { HedgeConfig, HungNodesConfig, ResponseCacheConfig } from "../../config/sections/latency.js";
import { hedgeSchema, hungNodesSchema } from "../../config/sections/latency.js";
import type { Candidate } from "../upstreams/balancer.js";
import { hasBlock, rankCandidates } from "../upstreams/balancer.js";
import { CallTracker } from "../upstreams/callTracker.js";
import { chooseNode } from "../upstreams/chooseNode.js";
import { HedgeBudget } from "../upstreams/hedgeBudget.js";
import type { BroadcastTarget } from "../upstreams/broadcastTransaction.js";
import {
  broadcastRawTransaction,
  rawTransactionHash,
  transactionSender,
} from "../upstreams/broadcastTransaction.js";
import type { RateLimiter, RateVerdict } from "../limits/ipRateLimiter.js";
import { forward } from "../upstreams/forward.js";
import type { NetworkUpstreams } from "../upstreams/networkUpstreams.js";
import type { BlockTags } from "./blockParams.js";
import {
  blockHashParamIndex,
  blockParamIndex,
  extraArguments,
  pinBlockParam,
  readBlockHash,
  readBlockParam,
} from "./blockParams.js";
import { checkGetLogs } from "./getLogsRule.js";
import { RecentServedHeads } from "./recentServedHeads.js";
import type { Filters } from "../filters/filterStore.js";
import { FILTER_METHODS } from "../filters/filterStore.js";
import { SUBSCRIPTION_METHODS, checkMethod, isIdempotent, methodLabel } from "./methodPolicy.js";
import { errorResponse } from "./parseRequest.js";
import type { AnswerBlock, BlockStanding, CachePlan } from "./responseCache.js";
import { ResponseCache, blockOfAnswer, blockStanding, cachePlan } from "./responseCache.js";
import { RawResult, resultValue } from "./serialize.js";

/** geth's answer for state at a block it does not have; clients know it. */
const HEADER_NOT_FOUND = -32000;
/** Methods answering `null` (not an error) for a block above the head, as a node at that head would. */
const NULL_ABOVE_HEAD = new Set([
  "eth_getBlockByNumber",
  "eth_getBlockReceipts",
  "eth_getBlockTransactionCountByNumber",
  "eth_getUncleCountByBlockNumber",
  "eth_getTransactionByBlockNumberAndIndex",
  "eth_getUncleByBlockNumberAndIndex",
]);

/** Methods the gateway answers itself: like a node, it takes no arguments to them. */
const OWN_ANSWERS = new Set(["eth_blockNumber", "eth_chainId", "eth_accounts"]);

const hasArguments = (request: JsonRpcRequest) => Array.isArray(request.params) && request.params.length > 0;

export interface CallHandlerOptions {
  upstreams: NetworkUpstreams;
  getLogsMaxRange: number;
  /** The network's block time: eth_getLogs is judged against the lowest head served within it. */
  blockTimeMs: number;
  /** Clock in milliseconds (injected for tests). */
  now?: () => number;
  /** The per-sender limit on eth_sendRawTransaction (keyed by the sending account), when configured. */
  senderLimiter?: RateLimiter;
  /**
   * The served head over every replica (shared state in Redis): eth_blockNumber answers it, so a client whose calls
   * land on different replicas never sees the number go back.
   */
  sharedHead?: { blockNumber(local: number): Promise<number> };
  /** Where raw transactions go besides the routed nodes (the reserved peers, when configured). */
  transactionPeers?: ReadonlyArray<{ name: string; httpUrl: string }>;
  upstreamTimeoutMs: number;
  metrics: GatewayMetrics;
  logger: Logger;
  /** Counts every call sent to a node (the autoscaler's request rate: the calls nodes serve). */
  count: () => void;
  /** Hedged reads; default: the config's defaults. */
  hedge?: HedgeConfig;
  /** Hung and failed nodes; default: the config's defaults. */
  hungNodes?: HungNodesConfig;
  /** The response cache; off when absent. */
  cache?: ResponseCacheConfig;
  /**
   * The peers' finalized block: answers at or below it are cached by number. Undefined: nothing by number is cached
   * (by hash still is).
   */
  finalizedNumber?: () => number | undefined;
}

type Answered = { response: JsonRpcResponse; outcome: GatewayOutcome };

interface MethodSeries {
  duration: { observe(seconds: number): void };
  outcome(outcome: GatewayOutcome): CountCell;
}

interface Prepared {
  request: JsonRpcRequest;
  /** The block the answering node should have. */
  minBlock: number | undefined;
  /**
   * The call names `minBlock` (by number, a pinned tag, a hash or a log range): only a node that has it is asked, and
   * the call waits a little for one (see `send`). Otherwise (methods without a block) a node below is ranked last.
   */
  requireBlock?: boolean;
  /** The call names a block by hash: nodes whose chain holds it are asked first. */
  blockHash?: string;
  /** A signed transaction (its hash): sent to every routed node at once, not to one. */
  broadcast?: string;
  /** The per-sender limit's verdict, when it is kept in the shared store: a refusal answers instead. */
  refusal?: Promise<Answered | undefined>;
}

/**
 * Answers one JSON-RPC call for one network: method policy, the served head, the eth_getLogs rules, block-aware
 * choice of node, one retry of idempotent reads on another node after a connection failure. Never throws: every
 * failure becomes a JSON-RPC error answer.
 */
export class CallHandler {
  /** Rotates among equally good nodes. */
  private turn = 0;
  /** Metric series per method label, looked up once. */
  private readonly series = new Map<string, MethodSeries>();
  private readonly inFlight: CountCell;
  private readonly chainId: string;
  /** Served heads of the last block time, for the eth_getLogs window. */
  private readonly recentHeads: RecentServedHeads;
  private readonly now: () => number;
  private filters: Filters | undefined;
  private readonly hedge: HedgeConfig;
  private readonly budget: HedgeBudget;
  private readonly tracker: CallTracker;
  private readonly cache: ResponseCache | undefined;
  private readonly finalizedNumber: () => number | undefined;
  /** Calls waiting for a node to have the block they name; tried again at each node head or routing change. */
  private readonly blockWaiters = new Set<() => void>();
  /** How long such a call waits: two block times, within the upstream timeout. */
  private readonly blockWaitMs: number;

  constructor(private readonly options: CallHandlerOptions) {
    this.inFlight = options.metrics.inFlightOf(options.upstreams.network);
    this.chainId = toQuantity(options.upstreams.chainId);
    this.now = options.now ?? Date.now;
    this.hedge = options.hedge ?? hedgeSchema.parse({});
    this.budget = new HedgeBudget(this.hedge.budget, this.hedge.burst);
    this.tracker = new CallTracker(this.hedge, options.hungNodes ?? hungNodesSchema.parse({}), () =>
      performance.now(),
    );
    this.finalizedNumber = options.finalizedNumber ?? (() => undefined);
    if (options.cache?.enabled) {
      const cache = new ResponseCache(options.cache, (block) => this.standing(block));
      this.cache = cache;
      options.metrics.countCacheBytes(options.upstreams.network, () => cache.bytes);
    }
    options.upstreams.on("change", () =>
      this.tracker.retain(new Set(options.upstreams.candidates().map((c) => c.name))),
    );
    this.recentHeads = new RecentServedHeads(options.blockTimeMs);
    this.blockWaitMs = Math.min(options.upstreamTimeoutMs, 2 * options.blockTimeMs);
    const wake = () => {
      for (const waiter of [...this.blockWaiters]) waiter();
    };
    options.upstreams.on("nodeHead", wake);
    options.upstreams.on("change", wake);
    options.upstreams.on("change", () => {
      const served = options.upstreams.servedHead();
      if (served !== undefined) this.recentHeads.record(served, this.now());
    });
  }

  get network(): string {
    return this.options.upstreams.network;
  }

  /**
   * The answer to one call; synchronous when the gateway answers it itself (eth_blockNumber from the served head,
   * eth_chainId, refusals), so the hot path allocates no promise.
   */
  handle(request: JsonRpcRequest, client = ""): JsonRpcResponse | Promise<JsonRpcResponse> {
    const started = performance.now();
    if (this.filters && FILTER_METHODS.has(request.method)) {
      // Served by the gateway, per client address (the limit on filters is per client).
      const outcome = (response: JsonRpcResponse): Answered => ({
        response,
        outcome: "error" in response ? "rpc_error" : "ok",
      });
      let answer;
      try {
        answer = this.filters.answer(request, client);
      } catch (error) {
        return this.record(request, this.unexpected(request, error), started);
      }
      return answer instanceof Promise
        ? answer.then(
            (response) => this.record(request, outcome(response), started),
            (error: unknown) => this.record(request, this.unexpected(request, error), started),
          )
        : this.record(request, outcome(answer), started);
    }
    const sharedHead = this.options.sharedHead;
    if (request.method === "eth_blockNumber" && sharedHead) {
      const served = this.options.upstreams.servedHead();
      if (served !== undefined)
        return sharedHead.blockNumber(served).then((head) =>
          this.record(
            request,
            {
              response: { jsonrpc: "2.0", id: request.id ?? null, result: toQuantity(head) },
              outcome: "ok",
            },
            started,
          ),
        );
    }
    let answered;
    let plan: CachePlan | undefined;
    try {
      answered = this.answer(request);
      if (!("response" in answered) && this.cache && !answered.broadcast)
        plan = cachePlan(request, answered.request, this.finalizedNumber());
    } catch (error) {
      answered = this.unexpected(request, error);
    }
    if ("response" in answered) return this.record(request, answered, started);
    if (plan) {
      const json = this.cache!.get(plan.key);
      this.cacheCount(json === undefined ? "miss" : "hit").n++;
      if (json !== undefined)
        return this.record(
          request,
          {
            response: { jsonrpc: "2.0", id: request.id ?? null, result: new RawResult(json) },
            outcome: "ok",
          },
          started,
        );
    }
    const cachePlanned = plan;
    return this.send(answered, true).then(
      (result) => {
        if (cachePlanned) this.keep(cachePlanned, result.response);
        return this.record(request, result, started);
      },
      (error: unknown) => this.record(request, this.unexpected(request, error), started),
    );
  }

  /** Keeps an answer that cannot change (a result, not an error or null) in the cache. */
  private keep(plan: CachePlan, response: JsonRpcResponse): void {
    if ("error" in response || response.result === null || response.result === undefined) return;
    const result = response.result;
    const block = plan.block === "inResult" ? blockOfAnswer(resultValue(result)) : plan.block;
    if (!block) return;
    this.cache!.set(plan.key, result instanceof RawResult ? result.json : JSON.stringify(result), block);
  }

  /**
   * Where a cached answer's block stands: a hash counts while a routed node's recent chain holds it (any node's in
   * panic mode), so an answer from a branch that a reorg replaced is never served again.
   */
  private standing(block: AnswerBlock): BlockStanding {
    const { upstreams } = this.options;
    return blockStanding(block, this.finalizedNumber(), (hash) => {
      const known = upstreams.blockOfHash(hash);
      if (!known) return undefined;
      const candidates = upstreams.candidates();
      const routed = candidates.filter((c) => c.routed && c.reachable);
      const serving = routed.length > 0 ? routed : candidates;
      return serving.some((c) => known.holders.has(c.name)) ? known.number : undefined;
    });
  }

  /** A call refused by the per-address rate limit: in the metrics, not in the autoscaler's count. */
  recordRateLimited(method: string): void {
    this.seriesOf(methodLabel(method)).outcome("rate_limited").n++;
  }

  /** Serves the filter methods from the gateway's own streams (set once the streams exist). */
  useFilters(filters: Filters): void {
    this.filters = filters;
  }

  /** A call of the gateway's own (logs of a block for subscriptions): routed like a client's, not counted as one. */
  async fetch(request: JsonRpcRequest): Promise<JsonRpcResponse> {
    const served = this.options.upstreams.servedHead();
    return (await this.send({ request, minBlock: served }, false)).response;
  }

  private record(request: JsonRpcRequest, answered: Answered, started: number): JsonRpcResponse {
    const series = this.seriesOf(methodLabel(request.method));
    series.outcome(answered.outcome).n++;
    series.duration.observe((performance.now() - started) / 1000);
    return answered.response;
  }

  private unexpected(request: JsonRpcRequest, error: unknown): Answered {
    this.options.logger.error(
      { err: error, method: request.method },
      "gateway: unexpected failure answering a call",
    );
    return {
      response: errorResponse(request.id ?? null, RPC_ERROR.INTERNAL_ERROR, "internal error"),
      outcome: "upstream_error",
    };
  }

  private seriesOf(method: string): MethodSeries {
    let series = this.series.get(method);
    if (!series) {
      const { metrics } = this.options;
      const network = this.network;
      const outcomes = new Map<GatewayOutcome, CountCell>();
      series = {
        duration: metrics.duration.cell({ network, method }),
        outcome: (outcome) => {
          let cell = outcomes.get(outcome);
          if (!cell) {
            cell = metrics.pendingRequests.cell(`${network}\n${method}\n${outcome}`, {
              network,
              method,
              outcome,
            });
            outcomes.set(outcome, cell);
          }
          return cell;
        },
      };
      this.series.set(method, series);
    }
    return series;
  }

  /** The answer when the gateway gives it without a node, or the call prepared for one. */
  private answer(request: JsonRpcRequest): Answered | Prepared {
    const id = request.id ?? null;
    const served = this.options.upstreams.servedHead();
    // The most frequent call of all, answered before anything else.
    if (request.method === "eth_blockNumber" && served !== undefined && !hasArguments(request))
      return { response: { jsonrpc: "2.0", id, result: toQuantity(served) }, outcome: "ok" };
    if (OWN_ANSWERS.has(request.method)) {
      const refused = extraArguments(request);
      if (refused) return { response: refused, outcome: "invalid" };
    }
    // Asked before almost every session (and by some clients before every call); every node the gateway uses has been
    // checked to be on this chain, so none needs asking.
    if (request.method === "eth_chainId")
      return { response: { jsonrpc: "2.0", id, result: this.chainId }, outcome: "ok" };
    // A public endpoint holds no keys: an empty list, as hosted endpoints answer (wallet libraries ask it).
    if (request.method === "eth_accounts")
      return { response: { jsonrpc: "2.0", id, result: [] }, outcome: "ok" };
    const policy = checkMethod(request.method);
    if (!policy.allowed)
      return { response: errorResponse(id, RPC_ERROR.METHOD_NOT_FOUND, policy.message), outcome: "refused" };
    if (request.method === "eth_sendRawTransaction") {
      const hash = rawTransactionHash(request.params);
      if (!hash)
        return {
          response: errorResponse(
            id,
            RPC_ERROR.INVALID_PARAMS,
            "invalid params: eth_sendRawTransaction takes one signed transaction as 0x-prefixed hex",
          ),
          outcome: "invalid",
        };
      const refused = this.senderRefusal(id, (request.params as string[])[0]!);
      if (refused instanceof Promise)
        return { request, minBlock: undefined, broadcast: hash, refusal: refused };
      return refused ?? { request, minBlock: undefined, broadcast: hash };
    }
    if (SUBSCRIPTION_METHODS.has(request.method))
      return {
        response: errorResponse(
          id,
          RPC_ERROR.METHOD_NOT_FOUND,
          `${request.method} is served over WebSocket only (/ws)`,
        ),
        outcome: "refused",
      };
    return this.prepare(request, served);
  }

  /** Resolves tags against the served head and applies the rules that need no node. */
  private prepare(
    request: JsonRpcRequest,
    served: number | undefined,
  ): Prepared | { response: JsonRpcResponse; outcome: GatewayOutcome } {
    const id = request.id ?? null;
    if (served === undefined) return { request, minBlock: undefined };
    const tags = this.blockTags(served);
    if (request.method === "eth_getLogs") {
      const verdict = checkGetLogs(
        request.params,
        served,
        this.options.getLogsMaxRange,
        this.recentHeads.lowest(this.now(), served),
        tags,
      );
      if (!verdict.ok) {
        this.options.metrics.getLogsRefused.inc({ network: this.network, reason: verdict.reason });
        return {
          response: errorResponse(id, verdict.code, verdict.message, verdict.data),
          outcome: "invalid",
        };
      }
      const prepared = {
        request: { ...request, params: verdict.params },
        minBlock: verdict.toBlock ?? served,
        requireBlock: true,
      };
      return verdict.blockHash ? this.byHash(prepared, verdict.blockHash) : prepared;
    }
    const hashIndex = blockHashParamIndex(request.method);
    if (hashIndex !== undefined && Array.isArray(request.params)) {
      const hash = readBlockHash(request.params[hashIndex]);
      return hash ? this.byHash({ request, minBlock: served }, hash) : { request, minBlock: served };
    }
    const index = blockParamIndex(request.method);
    if (index === undefined || !Array.isArray(request.params)) return { request, minBlock: served };
    const params = [...request.params];
    const target = readBlockParam(params[index], served, tags);
    if (target.kind === "hash") return this.byHash({ request, minBlock: served }, target.hash);
    if (target.kind !== "number") return { request, minBlock: target.kind === "tag" ? undefined : served };
    if (target.number > served) {
      // Above the served head: answer as a node at that head would.
      return NULL_ABOVE_HEAD.has(request.method)
        ? { response: { jsonrpc: "2.0", id, result: null }, outcome: "ok" }
        : { response: errorResponse(id, HEADER_NOT_FOUND, "header not found"), outcome: "rpc_error" };
    }
    params[index] = pinBlockParam(params[index], served, tags);
    return { request: { ...request, params }, minBlock: target.number, requireBlock: true };
  }

  /** The agreed safe and finalized heights, never above the served head (below it, every block is as final). */
  private blockTags(served: number): BlockTags {
    const { upstreams } = this.options;
    const safe = upstreams.safe()?.number;
    const finalized = upstreams.finalized()?.number;
    return {
      ...(safe === undefined ? {} : { safe: Math.min(safe, served) }),
      ...(finalized === undefined ? {} : { finalized: Math.min(finalized, served) }),
    };
  }

  /**
   * A call naming a block by hash goes to a node whose chain holds that block (a node behind has not got it yet, a
   * node on another branch never will); a hash older than the nodes' recent history is on every node, or on none.
   */
  private byHash(prepared: Prepared, hash: string): Prepared {
    const known = this.options.upstreams.blockOfHash(hash);
    return known
      ? { ...prepared, minBlock: known.number, requireBlock: true, blockHash: hash }
      : { ...prepared, minBlock: undefined, requireBlock: false };
  }

  /**
   * `raw`: a successful answer may keep the node's result as JSON text (the caller only serializes it).
   *
   * The call goes to the best node. A read also goes, while it is unanswered, to a second node when its node fails
   * (connection lost), hangs (outstanding past the node's own bound) or is slower than its usual (a hedge, within the
   * budget); the first answer wins and the others are dropped. At most three nodes are asked.
   */
  private send(prepared: Prepared, raw: boolean): Promise<Answered> {
    const { broadcast, refusal } = prepared;
    if (broadcast) {
      if (!refusal) return this.broadcast(prepared.request, broadcast);
      return refusal.then((refused) => refused ?? this.broadcast(prepared.request, broadcast));
    }
    const { request } = prepared;
    const { upstreams, metrics } = this.options;
    const network = this.network;
    const idempotent = isIdempotent(request.method);
    const hedged = idempotent && this.hedge.enabled && !this.hedge.excludeMethods.includes(request.method);
    return new Promise<Answered>((resolve) => {
      const tried = new Set<string>();
      const timers = new Set<NodeJS.Timeout>();
      let pending = 0;
      let done = false;
      let retries = idempotent ? 2 : 0;
      let lastError: RpcTransportError | undefined;
      let waiter: (() => void) | undefined;
      const finish = (answered: Answered) => {
        if (done) return;
        done = true;
        for (const timer of timers) clearTimeout(timer);
        if (waiter) this.blockWaiters.delete(waiter);
        resolve(answered);
      };
      const after = (ms: number, task: () => void) => {
        const timer = setTimeout(() => {
          timers.delete(timer);
          if (!done) task();
        }, ms);
        timers.add(timer);
      };
      const retry = () =>
        retries > 0 && launch("retry", this.choose(prepared, tried, pending === 0)) && retries-- > 0;
      const launch = (kind: "first" | "retry" | "hedge", choice: Candidate | undefined): boolean => {
        const answer = choice && upstreams.call(choice.name, request, this.options.upstreamTimeoutMs, raw);
        if (!choice || !answer) return false;
        tried.add(choice.name);
        // The autoscaler's count, as lightfleet_gateway_upstream_requests_total: what the gateway answers itself or
        // refuses never reaches a node and must not grow the pool.
        this.options.count();
        if (kind === "retry") metrics.retries.inc({ network });
        if (kind === "hedge") metrics.hedges.inc({ network, outcome: "sent" });
        else this.budget.earn();
        const release = upstreams.acquire(choice.name);
        const ticket = this.tracker.start(choice.name, request.method);
        this.inFlight.n++;
        pending++;
        let settled = false;
        const settle = () => {
          settled = true;
          pending--;
          this.inFlight.n--;
          release();
        };
        answer.then(
          (response) => {
            settle();
            this.tracker.answered(ticket);
            const outcome = "error" in response ? "rpc_error" : "ok";
            this.upstreamCount(choice.name, outcome).n++;
            if (!done && kind === "hedge") metrics.hedges.inc({ network, outcome: "won" });
            finish({ response, outcome });
          },
          (error: unknown) => {
            settle();
            this.tracker.failed(ticket);
            const reason = error instanceof RpcTransportError ? error.reason : "connection";
            this.upstreamCount(choice.name, reason).n++;
            lastError =
              error instanceof RpcTransportError ? error : new RpcTransportError(String(error), "connection");
            if (done || pending > 0) return;
            // Only a connection failure is retried (and only reads: the node may have seen the call before its
            // connection went). A timeout is not: the node may still be doing the work.
            if (reason === "connection" && retry()) return;
            finish(this.failure(request, lastError));
          },
        );
        if (!idempotent) return true;
        // Hung: past its own bound the node gets no new calls (the tracker says so) and this read moves on.
        const hungAfter = this.tracker.hungBound(choice.name);
        const onHung = () => {
          if (!settled) retry();
        };
        const hedgeAfter =
          kind === "first" && hedged ? this.tracker.hedgeDelay(choice.name, request.method) : Infinity;
        // One timer at a time per attempt (the hot path): the hedge, then the hung bound; a read moved on for a hung
        // node needs no hedge.
        if (hedgeAfter >= hungAfter) after(hungAfter, onHung);
        else
          after(hedgeAfter, () => {
            after(hungAfter - hedgeAfter, onHung);
            if (settled || pending > 1 || retries <= 0) return;
            const second = this.choose(prepared, tried, false);
            if (!second) return;
            if (!this.budget.take()) {
              metrics.hedges.inc({ network, outcome: "budget_refused" });
              return;
            }
            if (launch("hedge", second)) retries--;
          });
        return true;
      };
      if (launch("first", this.choose(prepared, tried, true))) return;
      if (!this.waitsForBlock(prepared)) return finish(this.failure(request, undefined));
      // The block is agreed on (the served head, or named by the client) but no node that may be asked has it yet:
      // one will within a block or so. Each node head or routing change tries again, up to that bound.
      const blockAt = prepared.minBlock!;
      const giveUp = setTimeout(() => finish(this.notYet(request, blockAt)), this.blockWaitMs);
      timers.add(giveUp);
      waiter = () => {
        if (done || !launch("first", this.choose(prepared, tried, true))) return;
        clearTimeout(giveUp);
        timers.delete(giveUp);
        this.blockWaiters.delete(waiter!);
        waiter = undefined;
      };
      this.blockWaiters.add(waiter);
    });
  }

  /** Whether a call that found no node should wait for one: it requires a block that reachable nodes lack. */
  private waitsForBlock({ requireBlock, minBlock }: Prepared): boolean {
    if (!requireBlock || minBlock === undefined) return false;
    return this.options.upstreams.candidates().some((c) => c.reachable && !hasBlock(c, minBlock));
  }

  /** No node got the block within the wait: as a node without it answers, and saying which block. */
  private notYet(request: JsonRpcRequest, block: number): Answered {
    return {
      response: errorResponse(
        request.id ?? null,
        HEADER_NOT_FOUND,
        `header not found: no node has block ${block} yet`,
      ),
      outcome: "unavailable",
    };
  }

  /** The node for the next attempt of a call (see chooseNode). */
  private choose(
    { minBlock, requireBlock, blockHash }: Prepared,
    tried: ReadonlySet<string>,
    nothingInFlight: boolean,
  ): Candidate | undefined {
    const { upstreams } = this.options;
    return chooseNode({
      candidates: upstreams.candidates(),
      minBlock,
      requireBlock,
      tried,
      avoid: this.tracker.avoided(),
      nothingInFlight,
      holders: blockHash ? upstreams.blockOfHash(blockHash)?.holders : undefined,
      turn: this.turn++,
    });
  }

  private failure(request: JsonRpcRequest, lastError: RpcTransportError | undefined): Answered {
    const id = request.id ?? null;
    if (!lastError)
      return {
        response: errorResponse(id, RPC_ERROR.INTERNAL_ERROR, `no node available for ${this.network}`),
        outcome: "unavailable",
      };
    return lastError.reason === "timeout"
      ? { response: errorResponse(id, RPC_ERROR.INTERNAL_ERROR, "upstream timeout"), outcome: "timeout" }
      : {
          response: errorResponse(id, RPC_ERROR.INTERNAL_ERROR, "upstream unavailable"),
          outcome: "upstream_error",
        };
  }

  /** The per-sender limit's refusal of a transaction, if any (the sender is recovered from the signature). */
  private senderRefusal(
    id: JsonRpcRequest["id"],
    raw: string,
  ): Answered | undefined | Promise<Answered | undefined> {
    const limiter = this.options.senderLimiter;
    if (!limiter) return undefined;
    const sender = transactionSender(raw);
    if (!sender)
      return {
        response: errorResponse(
          id ?? null,
          RPC_ERROR.INVALID_PARAMS,
          "invalid params: not a signed transaction",
        ),
        outcome: "invalid",
      };
    const verdict = limiter.take(sender, 1);
    const refuse = (verdict: RateVerdict): Answered | undefined => {
      if (verdict.ok) return undefined;
      return {
        response: errorResponse(
          id ?? null,
          RPC_ERROR.LIMIT_EXCEEDED,
          `limit exceeded: too many transactions from ${sender}`,
          { retryAfterMs: verdict.retryAfterMs },
        ),
        outcome: "rate_limited",
      };
    };
    return verdict instanceof Promise ? verdict.then(refuse) : refuse(verdict);
  }

  /**
   * A signed transaction goes to every node that may serve (the routed ones; every reachable one in panic mode) and
   * the configured peers, all at once; the client gets its hash once, at the first node that took it.
   */
  private async broadcast(request: JsonRpcRequest, hash: string): Promise<Answered> {
    const { upstreams, upstreamTimeoutMs } = this.options;
    const id = request.id ?? null;
    const raw = (request.params as string[])[0]!;
    const counted = <T extends JsonRpcResponse>(name: string, answer: Promise<T>): Promise<T> => {
      this.options.count();
      this.inFlight.n++;
      return answer.then(
        (response) => {
          this.inFlight.n--;
          this.upstreamCount(name, "error" in response ? "rpc_error" : "ok").n++;
          return response;
        },
        (error: unknown) => {
          this.inFlight.n--;
          this.upstreamCount(name, error instanceof RpcTransportError ? error.reason : "connection").n++;
          throw error;
        },
      );
    };
    const call = (name: string) => (method: string, params: unknown[]) => {
      const answer = upstreams.call(
        name,
        { jsonrpc: "2.0", id: 1, method, params },
        upstreamTimeoutMs,
        false,
      );
      return answer
        ? counted(name, answer)
        : Promise.reject(new RpcTransportError(`${name} left the pool`, "connection"));
    };
    const targets: BroadcastTarget[] = rankCandidates(upstreams.candidates(), undefined, new Set()).map(
      (node) => ({ name: node.name, call: call(node.name) }),
    );
    for (const peer of this.options.transactionPeers ?? [])
      targets.push({
        name: peer.name,
        call: (method, params) =>
          counted(
            peer.name,
            forward(peer.httpUrl, { jsonrpc: "2.0", id: 1, method, params }, upstreamTimeoutMs),
          ),
      });
    const result = await broadcastRawTransaction(raw, hash, targets);
    if (result.ok) return { response: { jsonrpc: "2.0", id, result: hash }, outcome: "ok" };
    if (result.response) return { response: { ...result.response, id }, outcome: "rpc_error" };
    if (!result.failure)
      return {
        response: errorResponse(id, RPC_ERROR.INTERNAL_ERROR, `no node available for ${this.network}`),
        outcome: "unavailable",
      };
    return result.failure.reason === "timeout"
      ? { response: errorResponse(id, RPC_ERROR.INTERNAL_ERROR, "upstream timeout"), outcome: "timeout" }
      : {
          response: errorResponse(id, RPC_ERROR.INTERNAL_ERROR, "upstream unavailable"),
          outcome: "upstream_error",
        };
  }

  private cacheCount(result: "hit" | "miss"): CountCell {
    const network = this.network;
    return this.options.metrics.pendingCacheRequests.cell(`${network}\n${result}`, { network, result });
  }

  private upstreamCount(upstream: string, outcome: string): CountCell {
    const network = this.network;
    return this.options.metrics.pendingUpstreamRequests.cell(`${network}\n${upstream}\n${outcome}`, {
      network,
      upstream,
      outcome,
    });
  }
}
