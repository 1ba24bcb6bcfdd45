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
import { chooseNode } from "../upstreams/chooseNode.js";
import { forward } from "../upstreams/forward.js";
import { HedgeBudget } from "../upstreams/hedgeBudget.js";
import type { Upstreams } from "../upstreams/upstreams.js";
import { isIdempotent } from "../rpc/methodPolicy.js";
import { errorResponse } from "../rpc/parseRequest.js";
import type { Answered } from "./failureAnswer.js";
import { failureAnswer } from "./failureAnswer.js";
import type { ForwardPlan } from "./plan.js";
import { HEADER_NOT_FOUND } from "./plan.js";

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
  private readonly budget: HedgeBudget;
  private readonly tracker: CallTracker;
  private readonly now: () => number;
  private readonly inFlight: CountCell;
  /** Calls waiting for a node to have the block they name; tried again at each node head or routing change. */
  private readonly blockWaiters = new Set<() => void>();
  /**
   * Reads past their hedge delay when the budget was spent, oldest first (a Set keeps insertion order): each token
   * a call earns goes to the one waiting longest, which is the read furthest into the slow tail.
   */
  private readonly waitingHedges = new Set<() => boolean>();
  /** How long such a call waits: two block times, within the upstream timeout. */
  private readonly blockWaitMs: number;
  /** Answer counts per node and outcome (metrics). */
  private readonly upstreamCells = new Map<string, Map<string, CountCell>>();

  constructor(private readonly options: NodeCallsOptions) {
    const { upstreams, hedge, hungNodes, metrics } = options;
    this.inFlight = metrics.inFlightOf(upstreams.network);
    this.budget = new HedgeBudget(hedge.budget, hedge.burst);
    this.now = options.now ?? (() => performance.now());
    this.tracker = new CallTracker(hedge, hungNodes, this.now);
    this.blockWaitMs = Math.min(options.upstreamTimeoutMs, 2 * options.blockTimeMs);
    upstreams.on("change", () => this.tracker.retain(new Set(upstreams.candidates().map((c) => c.name))));
    const wake = () => {
      for (const waiter of [...this.blockWaiters]) waiter();
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
   * budget); the first answer wins and the others are dropped. At most three nodes are asked.
   */
  send(plan: ForwardPlan, raw: boolean): Promise<Answered> {
    const { request } = plan;
    const { upstreams, metrics, hedge } = this.options;
    const network = this.network;
    const idempotent = isIdempotent(request.method);
    const hedged = idempotent && hedge.enabled && !hedge.excludeMethods.includes(request.method);
    return new Promise<Answered>((resolve) => {
      const tried = new Set<string>();
      const timers = new Set<NodeJS.Timeout>();
      let pending = 0;
      let done = false;
      let retries = idempotent ? 2 : 0;
      let lastError: RpcTransportError | undefined;
      let waiter: (() => void) | undefined;
      /** This read's hedge, while it waits for the budget. */
      let waitingHedge: (() => boolean) | undefined;
      const finish = (answered: Answered) => {
        if (done) return;
        done = true;
        for (const timer of timers) clearTimeout(timer);
        if (waitingHedge) this.waitingHedges.delete(waitingHedge);
        if (waiter) this.blockWaiters.delete(waiter);
        resolve(answered);
      };
      const failed = () =>
        finish(
          failureAnswer(
            request.id,
            lastError ? { kind: "node", error: lastError } : { kind: "noNode", network },
          ),
        );
      const after = (ms: number, task: () => void) => {
        const timer = setTimeout(() => {
          timers.delete(timer);
          if (!done) task();
        }, ms);
        timers.add(timer);
      };
      /** The nodes this call's attempts in flight are on. */
      const onNodes = new Map<number, string>();
      let attempts = 0;
      const retry = () =>
        retries > 0 && launch("retry", this.choose(plan, tried, pending === 0)) && retries-- > 0;
      /**
       * `first`: the client's call (it earns the budget its share); `retry`: after the only attempt failed with no
       * answer (it replaces that one, no budget); `hedge` and `move` (past the node's hung bound): extra calls, from
       * the budget.
       */
      const launch = (kind: "first" | "retry" | "move" | "hedge", choice: Candidate | undefined): boolean => {
        const answer = choice && upstreams.call(choice.name, request, this.options.upstreamTimeoutMs, raw);
        if (!choice || !answer) return false;
        tried.add(choice.name);
        // The autoscaler's count, as lightfleet_gateway_upstream_requests_total: what the gateway answers itself or
        // refuses never reaches a node and must not grow the pool.
        this.options.count();
        if (kind === "retry") metrics.retries.inc({ network, reason: "failed" });
        if (kind === "hedge") metrics.hedges.inc({ network, outcome: "sent" });
        if (kind === "first") {
          this.budget.earn();
          // The token may be a waiting read's, longest waiting first (this call's own hedge is not set up yet).
          for (const waiting of this.waitingHedges) if (!waiting()) break;
        }
        const attempt = attempts++;
        onNodes.set(attempt, choice.name);
        const release = upstreams.acquire(choice.name);
        const ticket = this.tracker.start(choice.name, request.method);
        this.inFlight.n++;
        pending++;
        let settled = false;
        const settle = () => {
          settled = true;
          onNodes.delete(attempt);
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
            failed();
          },
        );
        if (!idempotent) return true;
        // Past its node's hung bound this read moves on to another node. Where hedging is on, the move is an extra
        // call from the budget while another attempt may still answer (a node that keeps answering its other calls
        // is slow, not hung); it goes anyway, owed to the budget, when every attempt in flight is on a hung node or
        // this one has waited twice its bound (either way the read could wait out the upstream timeout). Not moved:
        // looked at again when its node would count as hung, or at twice the bound. Where hedging is off, it moves
        // at the bound as it must.
        const hungAfter = this.tracker.hungBound(choice.name);
        const started = this.now();
        const onHung = () => {
          if (settled || retries <= 0) return;
          const next = this.choose(plan, tried, false);
          const stuck = [...onNodes.values()].every((node) => this.tracker.isHung(node));
          const waited = this.now() - started;
          const owed = stuck || waited >= 2 * hungAfter;
          if (next && (owed || !hedged || this.budget.take())) {
            if (!launch("move", next)) return;
            retries--;
            metrics.retries.inc({ network, reason: owed ? "stuck" : "slow" });
            if (owed && hedged) this.budget.charge();
            return;
          }
          if (next) metrics.hedges.inc({ network, outcome: "budget_refused" });
          const again = Math.min(this.tracker.hungIn(choice.name), 2 * hungAfter - waited);
          after(again > 0 ? again : this.options.hungNodes.min, onHung);
        };
        const hedgeAfter =
          kind === "first" && hedged ? this.tracker.hedgeDelay(choice.name, request.method) : Infinity;
        // One timer at a time per attempt (the hot path): the hedge, then the hung bound; a read moved on for a hung
        // node needs no hedge.
        // A larger budget goes to a second hedge as well, to a third node, while the read is still unanswered (see
        // hedgeQuantiles): from the budget, never waiting for it.
        const secondAfter =
          kind === "first" && hedged ? this.tracker.secondHedgeDelay(choice.name, request.method) : undefined;
        const secondHedge = () => {
          if (settled || pending !== 2 || retries <= 0) return;
          const third = this.choose(plan, tried, false);
          if (!third) return;
          if (!this.budget.take()) metrics.hedges.inc({ network, outcome: "budget_refused" });
          else if (launch("hedge", third)) retries--;
        };
        if (hedgeAfter >= hungAfter) after(hungAfter, onHung);
        else
          after(hedgeAfter, () => {
            after(hungAfter - hedgeAfter, onHung);
            if (secondAfter !== undefined && secondAfter < hungAfter)
              after(Math.max(0, secondAfter - hedgeAfter), secondHedge);
            const hedge = (): boolean => {
              if (done || settled || pending > 1 || retries <= 0) return true;
              const second = this.choose(plan, tried, false);
              if (!second) return true;
              if (!this.budget.take()) return false;
              if (launch("hedge", second)) retries--;
              return true;
            };
            if (hedge()) return;
            // Spent: the hedge waits for the next token (the read is answered, moved or timed out meanwhile, or not).
            metrics.hedges.inc({ network, outcome: "budget_refused" });
            waitingHedge = () => {
              if (!hedge()) return false;
              this.waitingHedges.delete(waitingHedge!);
              waitingHedge = undefined;
              return true;
            };
            this.waitingHedges.add(waitingHedge);
          });
        return true;
      };
      if (launch("first", this.choose(plan, tried, true))) return;
      if (!this.waitsForBlock(plan)) return failed();
      // The block is agreed on (the served head, or named by the client) but no node that may be asked has it yet:
      // one will within a block or so. Each node head or routing change tries again, up to that bound.
      const blockAt = plan.minBlock!;
      const giveUp = setTimeout(() => finish(notYet(plan, blockAt)), this.blockWaitMs);
      timers.add(giveUp);
      waiter = () => {
        if (done || !launch("first", this.choose(plan, tried, true))) return;
        clearTimeout(giveUp);
        timers.delete(giveUp);
        this.blockWaiters.delete(waiter!);
        waiter = undefined;
      };
      this.blockWaiters.add(waiter);
    });
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
      avoid: this.tracker.avoided(),
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

/**
 * No node got the block within the wait: as a node without it answers (null for a block read, an error saying which
 * block for state at it).
 */
function notYet({ request, nullIfMissing }: ForwardPlan, block: number): Answered {
  if (nullIfMissing)
    return { response: { jsonrpc: "2.0", id: request.id ?? null, result: null }, outcome: "ok" };
  return {
    response: errorResponse(
      request.id ?? null,
      HEADER_NOT_FOUND,
      `header not found: no node has block ${block} yet`,
    ),
    outcome: "unavailable",
  };
}
