import { performance } from "node:perf_hooks";
import type { HedgeConfig, HungNodesConfig } from "../../config/sections/latency.js";
import type { GatewayMetrics } from "../../metrics/gatewayMetrics.js";
import type { CountCell } from "../../metrics/pendingCounts.js";
import type { JsonRpcRequest, JsonRpcResponse } from "../../rpc/jsonRpc.js";
import { RpcTransportError } from "../../rpc/jsonRpc.js";
import type { Candidate } from "../upstreams/balancer.js";
import { hasBlock, rankCandidates } from "../upstreams/balancer.js";
import type { BroadcastTarget } from "../upstreams/broadcastTransaction.js";
import { broadcastRawTransaction } from "../upstreams/broadcastTransaction.js";
import { CallTracker } from "../upstreams/callTracker.js";
import { Deadlines } from "../upstreams/deadlines.js";
import { chooseNode } from "../upstreams/chooseNode.js";
import { forward } from "../upstreams/forward.js";
import { HedgeBudget } from "../upstreams/hedgeBudget.js";
import type { Upstreams } from "../upstreams/upstreams.js";
import type { Answered } from "./failureAnswer.js";
import { failureAnswer } from "./failureAnswer.js";
import type { ForwardPlan } from "./plan.js";
import type { CallsShared } from "./forwardedCall.js";
import { ForwardedCall } from "./forwardedCall.js";

export interface NodeCallsOptions {
  upstreams: Upstreams;
  upstreamTimeoutMs: number;
  metrics: GatewayMetrics;
  /** Counts every call sent to a node (the autoscaler's request rate: the calls nodes serve). */
  count: () => void;
  hedge: HedgeConfig;
  hungNodes: HungNodesConfig;
  /** Where raw transactions go besides the routed nodes (the reserved peers, when configured). */
  transactionPeers: ReadonlyArray<{ name: string; httpUrl: string }>;
  /** The network's block time: a call naming a block no node has yet waits up to two of them for one. */
  blockTimeMs: number;
  /** Clock in milliseconds for the nodes' latencies (injected for tests); default performance.now. */
  now?: () => number;
}

/**
 * The calls a network's plans send to its nodes: a forwarded call to the best node (hedged, moved on from hung and
 * failed nodes), and a signed transaction to all of them. Keeps what that takes: the nodes' latency and failures,
 * the hedge budget, the turn among equal nodes, the in-flight and per-node counts.
 */
export class NodeCalls {
  /** Rotates among equally good nodes. */
  private turn = 0;
  private readonly inFlight: CountCell;
  /** What every forwarded call of the network shares (ForwardedCall): budget, tracker, timers, waiting calls. */
  private readonly shared: CallsShared;
  /** Answer counts per node and outcome (metrics). */
  private readonly upstreamCells = new Map<string, Map<string, CountCell>>();

  constructor(private readonly options: NodeCallsOptions) {
    const { upstreams, hedge, hungNodes, metrics } = options;
    this.inFlight = metrics.inFlightOf(upstreams.network);
    const now = options.now ?? (() => performance.now());
    const tracker = new CallTracker(hedge, hungNodes, now);
    const blockWaiters = new Set<() => void>();
    this.shared = {
      upstreams,
      upstreamTimeoutMs: options.upstreamTimeoutMs,
      metrics,
      network: upstreams.network,
      hedge,
      hungNodes,
      count: options.count,
      budget: new HedgeBudget(hedge.budget, hedge.burst),
      tracker,
      now,
      inFlight: this.inFlight,
      deadlines: new Deadlines(now),
      blockWaiters,
      waitingHedges: new Set(),
      blockWaitMs: Math.min(options.upstreamTimeoutMs, 2 * options.blockTimeMs),
      waitsForBlock: (plan) => this.waitsForBlock(plan),
      choose: (plan, tried, nothingInFlight) => this.choose(plan, tried, nothingInFlight),
      upstreamCount: (upstream, outcome) => this.upstreamCount(upstream, outcome),
    };
    upstreams.on("change", () => tracker.retain(new Set(upstreams.candidates().map((c) => c.name))));
    const wake = () => {
      for (const waiter of [...blockWaiters]) waiter();
    };
    upstreams.on("nodeHead", wake);
    upstreams.on("change", wake);
  }

  private get network(): string {
    return this.options.upstreams.network;
  }

  /**
   * `raw`: a successful answer may keep the node's result as JSON text (the caller only serializes it).
   *
   * The call goes to the best node. A read also goes, while it is unanswered, to a second node when its node fails
   * (connection lost), hangs (outstanding past the node's own bound) or is slower than its usual (a hedge, within the
   * budget); the first answer wins and the others are dropped. At most three nodes are asked (see ForwardedCall).
   */
  send(plan: ForwardPlan, raw: boolean): Promise<Answered>;
  /**
   * With `then`: the promise gives what `then` makes of the answer, done as the call finishes (one promise per call
   * where a `.then` would add a second); `failed` makes it of an exception thrown setting the call out. Neither may
   * throw.
   */
  send<T>(
    plan: ForwardPlan,
    raw: boolean,
    then: (answered: Answered) => T,
    failed: (error: unknown) => T,
  ): Promise<T>;
  send<T>(
    plan: ForwardPlan,
    raw: boolean,
    then?: (answered: Answered) => T,
    failed?: (error: unknown) => T,
  ): Promise<T | Answered> {
    if (!then || !failed) return new Promise<Answered>((resolve) => this.sendInto(plan, raw, resolve));
    return new Promise<T>((resolve) => {
      try {
        this.sendInto(plan, raw, (answered) => resolve(then(answered)));
      } catch (error) {
        resolve(failed(error));
      }
    });
  }

  /**
   * As send, with the answer handed to `done` as the call finishes: no promise at all. A throw setting the call out
   * goes to the caller.
   */
  sendInto(plan: ForwardPlan, raw: boolean, done: (answered: Answered) => void): void {
    new ForwardedCall(this.shared, plan, raw, done).start();
  }

  /** Whether a call that found no node should wait for one: it requires a block that reachable nodes lack. */
  private waitsForBlock({ requireBlock, minBlock }: ForwardPlan): boolean {
    if (!requireBlock || minBlock === undefined) return false;
    return this.options.upstreams.candidates().some((c) => c.reachable && !hasBlock(c, minBlock));
  }

  /** The node for the next attempt of a call (see chooseNode). */
  private choose(
    { minBlock, requireBlock, blockHash }: ForwardPlan,
    tried: ReadonlySet<string>,
    nothingInFlight: boolean,
  ): Candidate | undefined {
    const { upstreams } = this.options;
    return chooseNode({
      candidates: upstreams.candidates(),
      minBlock,
      requireBlock,
      tried,
      avoid: this.shared.tracker.avoided(),
      nothingInFlight,
      holders: blockHash ? upstreams.blockOfHash(blockHash)?.holders : undefined,
      turn: this.turn++,
    });
  }

  /**
   * A signed transaction goes to every node that may serve (the routed ones; every reachable one in panic mode) and
   * the configured peers, all at once; the client gets its hash once, at the first node that took it.
   */
  async broadcast(request: JsonRpcRequest, hash: string): Promise<Answered> {
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
      let sent = false;
      const answer = new Promise<JsonRpcResponse>((resolve, reject) => {
        const request: JsonRpcRequest = { jsonrpc: "2.0", id: 1, method, params };
        sent = upstreams.call(name, request, upstreamTimeoutMs, false, { answered: resolve, failed: reject });
      });
      return sent
        ? counted(name, answer)
        : Promise.reject(new RpcTransportError(`${name} left the pool`, "connection"));
    };
    const targets: BroadcastTarget[] = rankCandidates(upstreams.candidates(), undefined, new Set()).map(
      (node) => ({ name: node.name, call: call(node.name) }),
    );
    for (const peer of this.options.transactionPeers)
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
    return failureAnswer(
      id,
      result.failure ? { kind: "node", error: result.failure } : { kind: "noNode", network: this.network },
    );
  }

  /** The count of one node's answers with one outcome; found with no key built per call. */
  private upstreamCount(upstream: string, outcome: string): CountCell {
    let cells = this.upstreamCells.get(upstream);
    if (!cells) {
      cells = new Map();
      this.upstreamCells.set(upstream, cells);
    }
    let cell = cells.get(outcome);
    if (!cell) {
      const network = this.network;
      cell = this.options.metrics.pendingUpstreamRequests.cell(`${network}\n${upstream}\n${outcome}`, {
        network,
        upstream,
        outcome,
      });
      cells.set(outcome, cell);
    }
    return cell;
  }
}
