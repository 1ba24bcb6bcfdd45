import { performance } from "node:perf_hooks";
import type { HedgeConfig, HungNodesConfig, ResponseCacheConfig } from "../../config/sections/latency.js";
import { hedgeSchema, hungNodesSchema } from "../../config/sections/latency.js";
import type { Logger } from "../../log/logger.js";
import type { GatewayMetrics, GatewayOutcome } from "../../metrics/gatewayMetrics.js";
import type { CountCell } from "../../metrics/pendingCounts.js";
import { toQuantity } from "../../rpc/blocks.js";
import type { JsonRpcRequest, JsonRpcResponse } from "../../rpc/jsonRpc.js";
import type { Filters } from "../filters/filterStore.js";
import type { RateLimiter, RateVerdict } from "../limits/ipRateLimiter.js";
import type { BlockTags } from "../rpc/blockParams.js";
import { methodLabel } from "../rpc/methodPolicy.js";
import { RecentServedHeads } from "../rpc/recentServedHeads.js";
import type { AnswerBlock, BlockStanding, CachePlan } from "../rpc/responseCache.js";
import {
  ResponseCache,
  blockOfAnswer,
  blockStanding,
  cachePlan,
  withNumberFromAnswer,
} from "../rpc/responseCache.js";
import type { SharedAnswers } from "../sharedState/redisAnswers.js";
import { CanonicalHashes } from "./canonicalHashes.js";
import { RawResult, resultValue } from "../rpc/serialize.js";
import { resolvesAgainstHead } from "../rpc/sharedServedHead.js";
import type { SharedServedHead } from "../rpc/sharedServedHead.js";
import { errorResponse } from "../rpc/parseRequest.js";
import { RPC_ERROR } from "../../rpc/jsonRpc.js";
import type { Upstreams } from "../upstreams/upstreams.js";
import type { Answered } from "./failureAnswer.js";
import { failureAnswer } from "./failureAnswer.js";
import { planCall } from "./methodTable.js";
import { NodeCalls } from "./nodeCalls.js";
import type { ForwardPlan, Plan, PlanContext } from "./plan.js";

export interface CallExecutorOptions {
  upstreams: Upstreams;
  getLogsMaxRange: number;
  /** The network's block time: eth_getLogs is judged against the lowest head served within it. */
  blockTimeMs: number;
  /** Clock in milliseconds (injected for tests). */
  now?: () => number;
  /** The per-sender limit on eth_sendRawTransaction (keyed by the sending account), when configured. */
  senderLimiter?: RateLimiter;
  /**
   * The served head over every replica (shared state in Redis): calls that name the head resolve against it, so a
   * client whose calls land on different replicas never sees the head go back.
   */
  sharedHead?: SharedServedHead;
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
  /** The replicas' shared tier of the response cache (answers about final blocks, in Redis); none when absent. */
  sharedAnswers?: SharedAnswers;
  /**
   * The peers' finalized block: answers at or below it are cached by number. Undefined: nothing by number is cached
   * (by hash still is).
   */
  finalizedNumber?: () => number | undefined;
}

/** Where a call's answer goes when a node gives it (CallExecutor.handleInto). Must not throw. */
export type CallSink = (response: JsonRpcResponse) => void;

interface MethodSeries {
  duration: { observe(seconds: number): void };
  outcome(outcome: GatewayOutcome): CountCell;
}

/**
 * Answers one JSON-RPC call for one network: the method's planner decides (methodTable.ts), this carries the plan out
 * (the gateway's own answer, the filters, the shared head, the response cache, the nodes) and counts it. Never throws:
 * every failure becomes a JSON-RPC error answer (failureAnswer.ts).
 */
export class CallExecutor {
  /** Metric series per method label, looked up once. */
  private readonly series = new Map<string, MethodSeries>();
  /** The method of the call recorded last, and its series. */
  private lastSeries: { method: string; series: MethodSeries } | undefined = undefined;
  /** The response cache's counts per result, looked up once. */
  private readonly cacheCells = new Map<string, CountCell>();
  /** Its hits, the count a hit found with no planning adds to (a field: no look-up). */
  private hits: CountCell | undefined = undefined;
  /** Served heads of the last block time, for the eth_getLogs window. */
  private readonly recentHeads: RecentServedHeads;
  private readonly now: () => number;
  private filters: Filters | undefined;
  private readonly nodes: NodeCalls;
  private readonly cache: ResponseCache | undefined;
  /** Canonical hashes of final heights, for cached answers about blocks older than the nodes' recent chains. */
  private readonly canonicalHashes: CanonicalHashes;
  private readonly finalizedNumber: () => number | undefined;
  /** What the planners read of the network: live reads, no copy per call. */
  private readonly context: PlanContext;
  /** The block tags last resolved, and the heights they were resolved from. */
  private lastTags: {
    served: number;
    safe: number | undefined;
    finalized: number | undefined;
    tags: BlockTags;
  } = { served: -1, safe: undefined, finalized: undefined, tags: {} };

  constructor(private readonly options: CallExecutorOptions) {
    const { upstreams } = options;
    this.now = options.now ?? Date.now;
    this.finalizedNumber = options.finalizedNumber ?? (() => undefined);
    this.nodes = new NodeCalls({
      upstreams,
      upstreamTimeoutMs: options.upstreamTimeoutMs,
      metrics: options.metrics,
      count: options.count,
      hedge: options.hedge ?? hedgeSchema.parse({}),
      hungNodes: options.hungNodes ?? hungNodesSchema.parse({}),
      transactionPeers: options.transactionPeers ?? [],
      blockTimeMs: options.blockTimeMs,
    });
    this.canonicalHashes = new CanonicalHashes((request) =>
      this.nodes.send({ kind: "forward", request, minBlock: resultHeight(request) }, false),
    );
    if (options.cache?.enabled) {
      const shared = options.sharedAnswers;
      const cache = new ResponseCache(
        options.cache,
        (block) => this.standing(block),
        shared && ((key, json, block) => shared.put(key, { json, block })),
      );
      this.cache = cache;
      options.metrics.countCacheBytes(upstreams.network, () => cache.bytes);
    }
    this.recentHeads = new RecentServedHeads(options.blockTimeMs);
    upstreams.on("change", () => {
      const served = upstreams.servedHead();
      if (served !== undefined) this.recentHeads.record(served, this.now());
    });
    const chainId = toQuantity(upstreams.chainId);
    this.context = {
      get served() {
        return upstreams.servedHead();
      },
      chainId,
      blockTags: (served) => this.blockTags(served),
      heightOfHash: (hash) => upstreams.blockOfHash(hash)?.number,
      getLogsMaxRange: options.getLogsMaxRange,
      lowestRecentHead: (served) => this.recentHeads.lowest(this.now(), served),
      filters: false,
      limitsSenders: options.senderLimiter !== undefined,
    };
  }

  get network(): string {
    return this.options.upstreams.network;
  }

  /**
   * The answer to one call; synchronous when the gateway answers it itself (eth_blockNumber from the served head,
   * eth_chainId, refusals, cached answers), so the hot path allocates no promise.
   */
  handle(request: JsonRpcRequest, client = ""): JsonRpcResponse | Promise<JsonRpcResponse> {
    return this.handleInto(request, client, undefined)!;
  }

  /**
   * As handle, but an answer a node gives goes to `sink` as the call finishes (and undefined is returned): no promise
   * between the node's answer and the client's. Any other answer comes back as handle's does.
   */
  handleInto(
    request: JsonRpcRequest,
    client: string,
    sink: CallSink | undefined,
  ): JsonRpcResponse | Promise<JsonRpcResponse> | undefined {
    const started = performance.now();
    // A final answer named by its hash parameter: answered from its entry, with no planning (ResponseCache.finalHit).
    const hit = this.cache?.finalHit(request);
    if (hit !== undefined) {
      (this.hits ??= this.cacheCount("hit")).n++;
      return this.cachedAnswer(request, hit, started);
    }
    const shared = this.options.sharedHead;
    if (shared && resolvesAgainstHead(request.method)) {
      const local = this.options.upstreams.servedHead();
      if (local !== undefined) {
        let head;
        try {
          head = shared.head(local);
        } catch (error) {
          return this.record(request, this.unexpected(request, error), started);
        }
        // Already a promise: the answer comes through it (no sink, so carryOut answers).
        if (head instanceof Promise)
          return head.then(
            (h) => this.carryOut(request, client, started, h)!,
            (error: unknown) => this.record(request, this.unexpected(request, error), started),
          );
        if (head !== local) return this.carryOut(request, client, started, head, sink);
      }
    }
    return this.carryOut(request, client, started, undefined, sink);
  }

  /** Plans the call (against `served` when it is the shared head, not this replica's own) and carries it out. */
  private carryOut(
    request: JsonRpcRequest,
    client: string,
    started: number,
    served: number | undefined,
    sink?: CallSink,
  ): JsonRpcResponse | Promise<JsonRpcResponse> | undefined {
    let plan: Plan;
    try {
      plan = planCall(request, served === undefined ? this.context : { ...this.context, served });
    } catch (error) {
      return this.record(request, this.unexpected(request, error), started);
    }
    switch (plan.kind) {
      case "answer":
        if (plan.getLogsRefused)
          this.options.metrics.getLogsRefused.inc({ network: this.network, reason: plan.getLogsRefused });
        return this.record(request, plan, started);
      case "filters":
        return this.settle(request, () => this.answerFilter(request, client), started);
      case "broadcast":
        return this.settle(request, () => this.broadcast(plan), started);
      case "forward":
        return this.forward(request, plan, started, sink);
    }
  }

  /** A call refused by the per-address rate limit: in the metrics, not in the autoscaler's count. */
  recordRateLimited(method: string): void {
    this.seriesOf(methodLabel(method)).outcome("rate_limited").n++;
  }

  /** Serves the filter methods from the gateway's own streams (set once the streams exist). */
  useFilters(filters: Filters): void {
    this.filters = filters;
    this.context.filters = true;
  }

  /** A call of the gateway's own (logs of a block for subscriptions): routed like a client's, not counted as one. */
  async fetch(request: JsonRpcRequest): Promise<JsonRpcResponse> {
    const served = this.options.upstreams.servedHead();
    return (await this.nodes.send({ kind: "forward", request, minBlock: served }, false)).response;
  }

  /** A forwarded call: from the response cache when it holds the answer, else from a node (then kept). */
  private forward(
    request: JsonRpcRequest,
    plan: ForwardPlan,
    started: number,
    sink: CallSink | undefined,
  ): JsonRpcResponse | Promise<JsonRpcResponse> | undefined {
    let cached: CachePlan | undefined;
    if (this.cache) {
      try {
        cached = cachePlan(request, plan.request, this.finalizedNumber());
      } catch (error) {
        return this.record(request, this.unexpected(request, error), started);
      }
    }
    if (cached) {
      const result = this.cache!.find(cached);
      if (result !== undefined) {
        this.cacheCount("hit").n++;
        return this.cachedAnswer(request, result, started);
      }
      if (this.options.sharedAnswers && this.mayBeFinal(cached))
        return this.fromShared(request, plan, cached, started);
      this.cacheCount("miss").n++;
    }
    if (sink) {
      try {
        this.nodes.sendInto(plan, true, (answered) =>
          sink(this.fromNodeAnswered(request, cached, answered, started)),
        );
      } catch (error) {
        return this.record(request, this.unexpected(request, error), started);
      }
      return undefined;
    }
    return this.fromNode(request, plan, cached, started);
  }

  private cachedAnswer(request: JsonRpcRequest, result: RawResult, started: number): JsonRpcResponse {
    return this.record(
      request,
      { response: { jsonrpc: "2.0", id: request.id ?? null, result }, outcome: "ok" },
      started,
    );
  }

  /**
   * A call missed here, answered from the replicas' shared tier when another replica kept it and its block is final
   * by this replica's own nodes (kept here too then), else from a node.
   */
  private async fromShared(
    request: JsonRpcRequest,
    plan: ForwardPlan,
    cached: CachePlan,
    started: number,
  ): Promise<JsonRpcResponse> {
    const found = await this.options.sharedAnswers!.get(cached.key);
    // A block older than the nodes' recent chains: its height's canonical hash first (one header, shared by every
    // answer about that height), rather than the whole answer again.
    if (found && this.standing(found.block) === "unverified")
      await this.canonicalHashes.learn(found.block.number!);
    if (found && this.standing(found.block) === "final") {
      this.cache!.set(cached.key, found.json, found.block, cached.lookup);
      this.cacheCount("shared_hit").n++;
      return this.cachedAnswer(request, new RawResult(found.json), started);
    }
    this.cacheCount("miss").n++;
    return this.fromNode(request, plan, cached, started);
  }

  /** Only an answer that may be final is looked for among the replicas': never one about a block not final yet. */
  private mayBeFinal(cached: CachePlan): boolean {
    return cached.block === "inResult" || this.standing(cached.block) !== "current";
  }

  private fromNode(
    request: JsonRpcRequest,
    plan: ForwardPlan,
    cached: CachePlan | undefined,
    started: number,
  ): Promise<JsonRpcResponse> {
    // The answer is kept and recorded as the call finishes: no promise of its own.
    return this.nodes.send(
      plan,
      true,
      (answered) => this.fromNodeAnswered(request, cached, answered, started),
      (error: unknown) => this.record(request, this.unexpected(request, error), started),
    );
  }

  /** A node's answer, kept when it may be and recorded: the client's answer. Never throws. */
  private fromNodeAnswered(
    request: JsonRpcRequest,
    cached: CachePlan | undefined,
    answered: Answered,
    started: number,
  ): JsonRpcResponse {
    try {
      if (cached) this.keep(cached, answered.response);
      return this.record(request, answered, started);
    } catch (error) {
      return this.record(request, this.unexpected(request, error), started);
    }
  }

  /** The answer of a step that may answer at once or later, recorded; a throw or rejection is an internal error. */
  private settle(
    request: JsonRpcRequest,
    step: () => Answered | Promise<Answered>,
    started: number,
  ): JsonRpcResponse | Promise<JsonRpcResponse> {
    let answered;
    try {
      answered = step();
    } catch (error) {
      return this.record(request, this.unexpected(request, error), started);
    }
    return answered instanceof Promise
      ? answered.then(
          (a) => this.record(request, a, started),
          (error: unknown) => this.record(request, this.unexpected(request, error), started),
        )
      : this.record(request, answered, started);
  }

  /** Served by the gateway, per client address (the limit on filters is per client). */
  private answerFilter(request: JsonRpcRequest, client: string): Answered | Promise<Answered> {
    const outcome = (response: JsonRpcResponse): Answered => ({
      response,
      outcome: "error" in response ? "rpc_error" : "ok",
    });
    const answer = this.filters!.answer(request, client);
    return answer instanceof Promise ? answer.then(outcome) : outcome(answer);
  }

  /** A signed transaction, after the per-sender limit when there is one. */
  private broadcast(plan: Extract<Plan, { kind: "broadcast" }>): Promise<Answered> {
    const limiter = this.options.senderLimiter;
    const { request, hash, sender } = plan;
    if (!limiter || sender === undefined) return this.nodes.broadcast(request, hash);
    const refuse = (verdict: RateVerdict): Promise<Answered> | Answered =>
      verdict.ok
        ? this.nodes.broadcast(request, hash)
        : {
            response: errorResponse(
              request.id ?? null,
              RPC_ERROR.LIMIT_EXCEEDED,
              `limit exceeded: too many transactions from ${sender}`,
              { retryAfterMs: verdict.retryAfterMs },
            ),
            outcome: "rate_limited",
          };
    const verdict = limiter.take(sender, 1);
    return verdict instanceof Promise ? verdict.then(refuse) : Promise.resolve(refuse(verdict));
  }

  /** Keeps an answer that cannot change (a result, not an error or null) in the cache. */
  private keep(plan: CachePlan, response: JsonRpcResponse): void {
    if ("error" in response || response.result === null || response.result === undefined) return;
    const result = response.result;
    const block =
      plan.block === "inResult"
        ? blockOfAnswer(resultValue(result))
        : withNumberFromAnswer(plan.block, resultValue(result));
    if (!block) return;
    const json = result instanceof RawResult ? result.json : JSON.stringify(result);
    // Only answers about final blocks are shared (they are the same on every replica's chain), and only those small
    // enough to be kept here.
    if (this.cache!.set(plan.key, json, block, plan.lookup) === "final" && this.cache!.holds(plan.key))
      this.options.sharedAnswers?.put(plan.key, { json, block });
  }

  /**
   * Where a cached answer's block stands: a hash counts while a routed node's recent chain holds it (any node's in
   * panic mode), so an answer from a branch that a reorg replaced is never served again; off the recent chains, at a
   * final height, once it is the canonical hash there (looked up once per height, in the background: the hot path
   * stays synchronous, and the answer is served from the next call after).
   */
  private standing(block: AnswerBlock): BlockStanding {
    const { upstreams } = this.options;
    const finalized = upstreams.finalized();
    const standing = blockStanding(
      block,
      this.finalizedNumber(),
      (hash) => upstreams.servedHeightOfHash(hash),
      (number) =>
        number === finalized?.number ? finalized.hash.toLowerCase() : this.canonicalHashes.get(number),
    );
    if (standing === "unverified") void this.canonicalHashes.learn(block.number!);
    return standing;
  }

  /**
   * The agreed safe and finalized heights, never above the served head (below it, every block is as final). The same
   * object while the three heights stay (every call naming a block asks for it; they change once a block).
   */
  private blockTags(served: number): Readonly<BlockTags> {
    const { upstreams } = this.options;
    const safe = upstreams.safe()?.number;
    const finalized = upstreams.finalized()?.number;
    const last = this.lastTags;
    if (last.served === served && last.safe === safe && last.finalized === finalized) return last.tags;
    const tags: BlockTags = {};
    if (safe !== undefined) tags.safe = Math.min(safe, served);
    if (finalized !== undefined) tags.finalized = Math.min(finalized, served);
    this.lastTags = { served, safe, finalized, tags };
    return tags;
  }

  private record(request: JsonRpcRequest, answered: Answered, started: number): JsonRpcResponse {
    // Calls come in runs of one method: the series of the method before is compared, not looked up again.
    const last = this.lastSeries;
    let series: MethodSeries;
    if (last !== undefined && request.method === last.method) series = last.series;
    else {
      series = this.seriesOf(methodLabel(request.method));
      this.lastSeries = { method: request.method, series };
    }
    series.outcome(answered.outcome).n++;
    series.duration.observe((performance.now() - started) / 1000);
    return answered.response;
  }

  private unexpected(request: JsonRpcRequest, error: unknown): Answered {
    this.options.logger.error(
      { err: error, method: request.method },
      "gateway: unexpected failure answering a call",
    );
    return failureAnswer(request.id, { kind: "unexpected" });
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

  private cacheCount(result: "hit" | "shared_hit" | "miss"): CountCell {
    let cell = this.cacheCells.get(result);
    if (!cell) {
      const network = this.network;
      cell = this.options.metrics.pendingCacheRequests.cell(`${network}\n${result}`, { network, result });
      this.cacheCells.set(result, cell);
    }
    return cell;
  }
}

/** The height an eth_getBlockByNumber call asks for: a node must have reached it. */
function resultHeight(request: JsonRpcRequest): number {
  return Number.parseInt((request.params as string[])[0]!, 16);
}
