import type { Logger } from "../../log/logger.js";
import type { GatewayMetrics, GatewayOutcome } from "../../metrics/gatewayMetrics.js";
import type { CountCell } from "../../metrics/pendingCounts.js";
import { toQuantity } from "../../rpc/blocks.js";
import type { JsonRpcRequest, JsonRpcResponse } from "../../rpc/jsonRpc.js";
import { RPC_ERROR, RpcTransportError } from "../../rpc/jsonRpc.js";
import { pickCandidate, rankCandidates } from "../upstreams/balancer.js";
import type { BroadcastTarget } from "../upstreams/broadcastTransaction.js";
import {
  broadcastRawTransaction,
  rawTransactionHash,
  transactionSender,
} from "../upstreams/broadcastTransaction.js";
import type { RateLimiter, RateVerdict } from "../limits/ipRateLimiter.js";
import { forward } from "../upstreams/forward.js";
import type { NetworkUpstreams } from "../upstreams/networkUpstreams.js";
import {
  blockHashParamIndex,
  blockParamIndex,
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
}

type Answered = { response: JsonRpcResponse; outcome: GatewayOutcome };

interface MethodSeries {
  duration: { observe(seconds: number): void };
  outcome(outcome: GatewayOutcome): CountCell;
}

interface Prepared {
  request: JsonRpcRequest;
  /** The block the answering node must have. */
  minBlock: number | undefined;
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

  constructor(private readonly options: CallHandlerOptions) {
    this.inFlight = options.metrics.inFlightOf(options.upstreams.network);
    this.chainId = toQuantity(options.upstreams.chainId);
    this.now = options.now ?? Date.now;
    this.recentHeads = new RecentServedHeads(options.blockTimeMs);
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
    try {
      answered = this.answer(request);
    } catch (error) {
      answered = this.unexpected(request, error);
    }
    if ("response" in answered) return this.record(request, answered, started);
    return this.send(answered, true).then(
      (result) => this.record(request, result, started),
      (error: unknown) => this.record(request, this.unexpected(request, error), started),
    );
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
    if (request.method === "eth_blockNumber" && served !== undefined)
      return { response: { jsonrpc: "2.0", id, result: toQuantity(served) }, outcome: "ok" };
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
    if (request.method === "eth_getLogs") {
      const verdict = checkGetLogs(
        request.params,
        served,
        this.options.getLogsMaxRange,
        this.recentHeads.lowest(this.now(), served),
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
    const target = readBlockParam(params[index], served);
    if (target.kind === "hash") return this.byHash({ request, minBlock: served }, target.hash);
    if (target.kind !== "number") return { request, minBlock: target.kind === "tag" ? undefined : served };
    if (target.number > served) {
      // Above the served head: answer as a node at that head would.
      return NULL_ABOVE_HEAD.has(request.method)
        ? { response: { jsonrpc: "2.0", id, result: null }, outcome: "ok" }
        : { response: errorResponse(id, HEADER_NOT_FOUND, "header not found"), outcome: "rpc_error" };
    }
    params[index] = pinBlockParam(params[index], served);
    return { request: { ...request, params }, minBlock: target.number };
  }

  /**
   * A call naming a block by hash goes to a node whose chain holds that block (a node behind has not got it yet, a
   * node on another branch never will); a hash older than the nodes' recent history is on every node, or on none.
   */
  private byHash(prepared: Prepared, hash: string): Prepared {
    const known = this.options.upstreams.blockOfHash(hash);
    return known
      ? { ...prepared, minBlock: known.number, blockHash: hash }
      : { ...prepared, minBlock: undefined };
  }

  /** `raw`: a successful answer may keep the node's result as JSON text (the caller only serializes it). */
  private async send(
    { request, minBlock, blockHash, broadcast, refusal }: Prepared,
    raw: boolean,
  ): Promise<Answered> {
    if (broadcast) return (await refusal) ?? this.broadcast(request, broadcast);
    const { upstreams, metrics } = this.options;
    const tried = new Set<string>();
    const attempts = isIdempotent(request.method) ? 2 : 1;
    let lastError: RpcTransportError | undefined;
    for (let attempt = 0; attempt < attempts; attempt++) {
      let ranked = rankCandidates(upstreams.candidates(), minBlock, tried);
      if (blockHash) {
        const holders = upstreams.blockOfHash(blockHash)?.holders;
        const holding = holders ? ranked.filter((c) => holders.has(c.name)) : [];
        if (holding.length > 0) ranked = holding;
      }
      const choice = pickCandidate(ranked, minBlock, this.turn++);
      const answer = choice && upstreams.call(choice.name, request, this.options.upstreamTimeoutMs, raw);
      if (!choice || !answer) break;
      tried.add(choice.name);
      // The autoscaler's count, as lightfleet_gateway_upstream_requests_total: what the gateway answers itself or
      // refuses never reaches a node and must not grow the pool.
      this.options.count();
      if (attempt > 0) metrics.retries.inc({ network: this.network });
      const release = upstreams.acquire(choice.name);
      this.inFlight.n++;
      try {
        const response = await answer;
        const outcome = "error" in response ? "rpc_error" : "ok";
        this.upstreamCount(choice.name, outcome).n++;
        return { response, outcome };
      } catch (error) {
        const reason = error instanceof RpcTransportError ? error.reason : "connection";
        this.upstreamCount(choice.name, reason).n++;
        lastError =
          error instanceof RpcTransportError ? error : new RpcTransportError(String(error), "connection");
        // Only a connection failure is retried (and only reads: the node may have seen the call before its connection
        // went). A timeout is not: the node may still be doing the work.
        if (reason !== "connection") break;
      } finally {
        release();
        this.inFlight.n--;
      }
    }
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

  private upstreamCount(upstream: string, outcome: string): CountCell {
    const network = this.network;
    return this.options.metrics.pendingUpstreamRequests.cell(`${network}\n${upstream}\n${outcome}`, {
      network,
      upstream,
      outcome,
    });
  }
}
