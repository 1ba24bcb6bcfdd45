import type { Logger } from "../../log/logger.js";
import type { GatewayMetrics, GatewayOutcome } from "../../metrics/gatewayMetrics.js";
import { toQuantity } from "../../rpc/blocks.js";
import type { JsonRpcRequest, JsonRpcResponse } from "../../rpc/jsonRpc.js";
import { RPC_ERROR, RpcTransportError } from "../../rpc/jsonRpc.js";
import { pickCandidate, rankCandidates } from "../upstreams/balancer.js";
import { forward } from "../upstreams/forward.js";
import type { NetworkUpstreams } from "../upstreams/networkUpstreams.js";
import { blockParamIndex, readBlockParam } from "./blockParams.js";
import { checkGetLogs } from "./getLogsRule.js";
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
  upstreamTimeoutMs: number;
  metrics: GatewayMetrics;
  logger: Logger;
  /** Counts every call answered (the autoscaler's request rate). */
  count: () => void;
}

interface Prepared {
  request: JsonRpcRequest;
  /** The block the answering node must have. */
  minBlock: number | undefined;
}

/**
 * Answers one JSON-RPC call for one network: method policy, the served head, the eth_getLogs rules, block-aware
 * choice of node, one retry of idempotent reads on another node after a connection failure. Never throws: every
 * failure becomes a JSON-RPC error answer.
 */
export class CallHandler {
  /** Rotates among equally good nodes. */
  private turn = 0;

  constructor(private readonly options: CallHandlerOptions) {}

  get network(): string {
    return this.options.upstreams.network;
  }

  async handle(request: JsonRpcRequest): Promise<JsonRpcResponse> {
    const started = performance.now();
    const method = methodLabel(request.method);
    let outcome: GatewayOutcome = "ok";
    let response: JsonRpcResponse;
    try {
      ({ response, outcome } = await this.answer(request));
    } catch (error) {
      this.options.logger.error(
        { err: error, method: request.method },
        "gateway: unexpected failure answering a call",
      );
      response = errorResponse(request.id ?? null, RPC_ERROR.INTERNAL_ERROR, "internal error");
      outcome = "upstream_error";
    }
    this.options.count();
    const labels = { network: this.network, method };
    this.options.metrics.requests.inc({ ...labels, outcome });
    this.options.metrics.duration.observe(labels, (performance.now() - started) / 1000);
    return response;
  }

  /** A call refused by the per-address rate limit: in the metrics, not in the autoscaler's count. */
  recordRateLimited(method: string): void {
    this.options.metrics.requests.inc({
      network: this.network,
      method: methodLabel(method),
      outcome: "rate_limited",
    });
  }

  /** A call of the gateway's own (logs of a block for subscriptions): routed like a client's, not counted as one. */
  async fetch(request: JsonRpcRequest): Promise<JsonRpcResponse> {
    const served = this.options.upstreams.servedHead();
    return (await this.send({ request, minBlock: served })).response;
  }

  private async answer(
    request: JsonRpcRequest,
  ): Promise<{ response: JsonRpcResponse; outcome: GatewayOutcome }> {
    const id = request.id ?? null;
    const fail = (outcome: GatewayOutcome, code: number, message: string, data?: unknown) => ({
      response: errorResponse(id, code, message, data),
      outcome,
    });
    const policy = checkMethod(request.method);
    if (!policy.allowed) return fail("refused", RPC_ERROR.METHOD_NOT_FOUND, policy.message);
    if (SUBSCRIPTION_METHODS.has(request.method))
      return fail(
        "refused",
        RPC_ERROR.METHOD_NOT_FOUND,
        `${request.method} is served over WebSocket only (/ws)`,
      );

    const served = this.options.upstreams.servedHead();
    if (request.method === "eth_blockNumber" && served !== undefined)
      return { response: { jsonrpc: "2.0", id, result: toQuantity(served) }, outcome: "ok" };

    const prepared = this.prepare(request, served);
    if ("response" in prepared) return prepared;
    return this.send(prepared);
  }

  /** Resolves tags against the served head and applies the rules that need no node. */
  private prepare(
    request: JsonRpcRequest,
    served: number | undefined,
  ): Prepared | { response: JsonRpcResponse; outcome: GatewayOutcome } {
    const id = request.id ?? null;
    if (served === undefined) return { request, minBlock: undefined };
    if (request.method === "eth_getLogs") {
      const verdict = checkGetLogs(request.params, served, this.options.getLogsMaxRange);
      if (!verdict.ok) {
        this.options.metrics.getLogsRefused.inc({ network: this.network, reason: verdict.reason });
        return {
          response: errorResponse(id, verdict.code, verdict.message, verdict.data),
          outcome: "invalid",
        };
      }
      return { request: { ...request, params: verdict.params }, minBlock: verdict.toBlock ?? served };
    }
    const index = blockParamIndex(request.method);
    if (index === undefined || !Array.isArray(request.params)) return { request, minBlock: served };
    const params = [...request.params];
    const target = readBlockParam(params[index], served);
    if (target.kind !== "number") return { request, minBlock: target.kind === "tag" ? undefined : served };
    if (target.number > served) {
      // Above the served head: answer as a node at that head would.
      return NULL_ABOVE_HEAD.has(request.method)
        ? { response: { jsonrpc: "2.0", id, result: null }, outcome: "ok" }
        : { response: errorResponse(id, HEADER_NOT_FOUND, "header not found"), outcome: "rpc_error" };
    }
    // "latest" becomes the served head, so every node answers for the same block.
    if (params[index] === "latest") params[index] = toQuantity(target.number);
    return { request: { ...request, params }, minBlock: target.number };
  }

  private async send({
    request,
    minBlock,
  }: Prepared): Promise<{ response: JsonRpcResponse; outcome: GatewayOutcome }> {
    const { upstreams, metrics } = this.options;
    const tried = new Set<string>();
    const attempts = isIdempotent(request.method) ? 2 : 1;
    let lastError: RpcTransportError | undefined;
    for (let attempt = 0; attempt < attempts; attempt++) {
      const choice = pickCandidate(
        rankCandidates(upstreams.candidates(), minBlock, tried),
        minBlock,
        this.turn++,
      );
      const url = choice && upstreams.url(choice.name);
      if (!choice || !url) break;
      tried.add(choice.name);
      if (attempt > 0) metrics.retries.inc({ network: this.network });
      const release = upstreams.acquire(choice.name);
      metrics.upstreamInFlight.inc({ network: this.network });
      try {
        const response = await forward(url, request, this.options.upstreamTimeoutMs);
        metrics.upstreamRequests.inc({
          network: this.network,
          upstream: choice.name,
          outcome: "error" in response ? "rpc_error" : "ok",
        });
        return { response, outcome: "error" in response ? "rpc_error" : "ok" };
      } catch (error) {
        const reason = error instanceof RpcTransportError ? error.reason : "connection";
        metrics.upstreamRequests.inc({ network: this.network, upstream: choice.name, outcome: reason });
        lastError =
          error instanceof RpcTransportError ? error : new RpcTransportError(String(error), "connection");
        // Only a connection failure is retried: the node never saw the call. A timeout may have done the work.
        if (reason !== "connection") break;
      } finally {
        release();
        metrics.upstreamInFlight.dec({ network: this.network });
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
}
