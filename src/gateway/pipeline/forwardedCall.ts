import type { HedgeConfig, HungNodesConfig } from "../../config/sections/latency.js";
import type { GatewayMetrics } from "../../metrics/gatewayMetrics.js";
import type { CountCell } from "../../metrics/pendingCounts.js";
import type { JsonRpcResponse } from "../../rpc/jsonRpc.js";
import { RpcTransportError } from "../../rpc/jsonRpc.js";
import type { Candidate } from "../upstreams/balancer.js";
import type { CallTicket, CallTracker } from "../upstreams/callTracker.js";
import type { Deadline, Deadlines } from "../upstreams/deadlines.js";
import type { HedgeBudget } from "../upstreams/hedgeBudget.js";
import type { ResponseSink, Upstreams } from "../upstreams/upstreams.js";
import { isIdempotent } from "../rpc/methodPolicy.js";
import { errorResponse } from "../rpc/parseRequest.js";
import type { Answered } from "./failureAnswer.js";
import { failureAnswer } from "./failureAnswer.js";
import type { ForwardPlan } from "./plan.js";
import { HEADER_NOT_FOUND } from "./plan.js";

/** What a forwarded call shares with the network's other calls (kept by NodeCalls). */
export interface CallsShared {
  upstreams: Upstreams;
  upstreamTimeoutMs: number;
  metrics: GatewayMetrics;
  network: string;
  hedge: HedgeConfig;
  hungNodes: HungNodesConfig;
  /** Counts every call sent to a node (the autoscaler's request rate). */
  count: () => void;
  budget: HedgeBudget;
  tracker: CallTracker;
  now: () => number;
  inFlight: CountCell;
  deadlines: Deadlines;
  /** Calls waiting for a node to have the block they name; tried again at each node head or routing change. */
  blockWaiters: Set<() => void>;
  /**
   * Reads past their hedge delay when the budget was spent, oldest first (a Set keeps insertion order): each token
   * a call earns goes to the one waiting longest, which is the read furthest into the slow tail.
   */
  waitingHedges: Set<() => boolean>;
  /** How long a call waits for a node to have its block: two block times, within the upstream timeout. */
  blockWaitMs: number;
  waitsForBlock(plan: ForwardPlan): boolean;
  choose(plan: ForwardPlan, tried: ReadonlySet<string>, nothingInFlight: boolean): Candidate | undefined;
  upstreamCount(upstream: string, outcome: string): CountCell;
}

/** What a read does when its wait on a node passes the node's hung bound (see atHungBound). */
export type HungBoundStep =
  { move: true; owed: boolean; fromBudget: boolean } | { move: false; refused: boolean; again: number };

/**
 * The decision for a read still waiting when its wait on a node passes that node's hung bound. It moves to `next`
 * (another node, when there is one): owed to the budget when every attempt in flight is on a hung node or it has
 * waited twice the bound (either way the read could wait out the upstream timeout); else, with hedging on, only with
 * a token of the budget (`fromBudget`: a node that keeps answering its other calls is slow, not hung); with hedging
 * off, at once, as it must. Not moved: looked at again when its node would count as hung, or at twice the bound
 * (`again` ms from now; `refused` when a node was there but the budget was spent).
 */
export function atHungBound(s: {
  next: boolean;
  stuck: boolean;
  waited: number;
  hungAfter: number;
  hedged: boolean;
  budgetLeft: boolean;
  /** In how many ms the node counts as hung (CallTracker.hungIn). */
  hungIn: number;
  /** The least wait before looking again (hungNodes.min). */
  minWait: number;
}): HungBoundStep {
  const owed = s.stuck || s.waited >= 2 * s.hungAfter;
  if (s.next && (owed || !s.hedged || s.budgetLeft))
    return { move: true, owed, fromBudget: !owed && s.hedged };
  const again = Math.min(s.hungIn, 2 * s.hungAfter - s.waited);
  return { move: false, refused: s.next, again: again > 0 ? again : s.minWait };
}

/**
 * `first`: the client's call (it earns the budget its share); `retry`: after the only attempt failed with no answer
 * (it replaces that one, no budget); `hedge` and `move` (past the node's hung bound): extra calls, from the budget.
 */
type AttemptKind = "first" | "retry" | "move" | "hedge";

/** One attempt of a call on one node: the node's answer comes straight to it (no promise between). */
class Attempt implements ResponseSink {
  settled = false;
  /** When it was sent, and after how long its node counts as hung (reads only). */
  started = 0;
  hungAfter = 0;
  /** Set once the node took the call (see launch). */
  ticket!: CallTicket;
  release!: () => void;

  constructor(
    readonly call: ForwardedCall,
    readonly node: string,
    readonly kind: AttemptKind,
  ) {}

  answered(response: JsonRpcResponse): void {
    if (this.settled) return;
    const call = this.call;
    const shared = call.shared;
    this.settle();
    shared.tracker.answered(this.ticket);
    const outcome = "error" in response ? "rpc_error" : "ok";
    shared.upstreamCount(this.node, outcome).n++;
    if (!call.done && this.kind === "hedge")
      shared.metrics.hedges.inc({ network: shared.network, outcome: "won" });
    call.finish({ response, outcome });
  }

  failed(error: unknown): void {
    if (this.settled) return;
    const call = this.call;
    const shared = call.shared;
    this.settle();
    shared.tracker.failed(this.ticket);
    const reason = error instanceof RpcTransportError ? error.reason : "connection";
    shared.upstreamCount(this.node, reason).n++;
    call.lastError =
      error instanceof RpcTransportError ? error : new RpcTransportError(String(error), "connection");
    if (call.done || call.pending > 0) return;
    // Only a connection failure is retried (and only reads: the node may have seen the call before its connection
    // went). A timeout is not: the node may still be doing the work.
    if (reason === "connection" && call.retry()) return;
    call.failed();
  }

  private settle(): void {
    this.settled = true;
    this.call.pending--;
    this.call.shared.inFlight.n--;
    this.release();
  }

  /** Past its node's hung bound: moved on, or looked at again later (see atHungBound). */
  onHung(): void {
    const call = this.call;
    if (this.settled || call.retries <= 0) return;
    const shared = call.shared;
    const next = call.choose(false);
    const step = atHungBound({
      next: next !== undefined,
      stuck: call.stuck(),
      waited: shared.now() - this.started,
      hungAfter: this.hungAfter,
      hedged: call.hedged,
      budgetLeft: shared.budget.left(),
      hungIn: shared.tracker.hungIn(this.node),
      minWait: shared.hungNodes.min,
    });
    const network = shared.network;
    if (step.move) {
      if (step.fromBudget) shared.budget.take();
      if (!call.launch("move", next)) return;
      call.retries--;
      shared.metrics.retries.inc({ network, reason: step.owed ? "stuck" : "slow" });
      if (step.owed && call.hedged) shared.budget.charge();
      return;
    }
    if (step.refused) shared.metrics.hedges.inc({ network, outcome: "budget_refused" });
    call.after(step.again, () => this.onHung());
  }

  /** At its hedge delay: a second node too, from the budget, or waiting for the next token. */
  onHedgeDelay(hedgeAfter: number, secondAfter: number | undefined): void {
    const call = this.call;
    call.after(this.hungAfter - hedgeAfter, () => this.onHung());
    if (secondAfter !== undefined && secondAfter < this.hungAfter)
      call.after(Math.max(0, secondAfter - hedgeAfter), () => this.secondHedge());
    if (this.hedge()) return;
    // Spent: the hedge waits for the next token (the read is answered, moved or timed out meanwhile, or not).
    const shared = call.shared;
    shared.metrics.hedges.inc({ network: shared.network, outcome: "budget_refused" });
    const waiting = (): boolean => {
      if (!this.hedge()) return false;
      shared.waitingHedges.delete(waiting);
      call.waitingHedge = undefined;
      return true;
    };
    call.waitingHedge = waiting;
    shared.waitingHedges.add(waiting);
  }

  /** The hedge, when the budget has a token; false: spent, to wait for one. True when done with (sent or moot). */
  private hedge(): boolean {
    const call = this.call;
    if (call.done || this.settled || call.pending > 1 || call.retries <= 0) return true;
    const second = call.choose(false);
    if (!second) return true;
    if (!call.shared.budget.take()) return false;
    if (call.launch("hedge", second)) call.retries--;
    return true;
  }

  /** A larger budget's second hedge, to a third node, while the read is still unanswered: never waits for a token. */
  private secondHedge(): void {
    const call = this.call;
    if (this.settled || call.pending !== 2 || call.retries <= 0) return;
    const third = call.choose(false);
    if (!third) return;
    const shared = call.shared;
    if (!shared.budget.take())
      shared.metrics.hedges.inc({ network: shared.network, outcome: "budget_refused" });
    else if (call.launch("hedge", third)) call.retries--;
  }
}

/**
 * One forwarded call, from its first attempt to its answer: sent to the best node and, while unanswered, for a read,
 * to a second node when its node fails (connection lost), hangs (outstanding past the node's own bound) or is slower
 * than its usual (a hedge, within the budget); the first answer wins and the others are dropped. At most three nodes
 * are asked. One object per call with its attempts (no closure per step), its timers on the network's Deadlines.
 */
export class ForwardedCall {
  readonly tried = new Set<string>();
  /** Its attempts, in flight or settled. */
  private readonly attempts: Attempt[] = [];
  /** Its timers still to go off or cancel. */
  private readonly timers: Deadline[] = [];
  pending = 0;
  done = false;
  retries: number;
  lastError: RpcTransportError | undefined;
  private waiter: (() => void) | undefined;
  /** This read's hedge, while it waits for the budget. */
  waitingHedge: (() => boolean) | undefined;
  private readonly idempotent: boolean;
  readonly hedged: boolean;

  constructor(
    readonly shared: CallsShared,
    private readonly plan: ForwardPlan,
    private readonly raw: boolean,
    private readonly resolve: (answered: Answered) => void,
  ) {
    const { method } = plan.request;
    this.idempotent = isIdempotent(method);
    const { hedge } = shared;
    this.hedged = this.idempotent && hedge.enabled && !hedge.excludeMethods.includes(method);
    this.retries = this.idempotent ? 2 : 0;
  }

  start(): void {
    if (this.launch("first", this.choose(true))) return;
    if (!this.shared.waitsForBlock(this.plan)) return this.failed();
    // The block is agreed on (the served head, or named by the client) but no node that may be asked has it yet:
    // one will within a block or so. Each node head or routing change tries again, up to that bound.
    const blockAt = this.plan.minBlock!;
    const waiters = this.shared.blockWaiters;
    const giveUp = this.after(this.shared.blockWaitMs, () => this.finish(notYet(this.plan, blockAt)));
    const waiter = () => {
      if (this.done || !this.launch("first", this.choose(true))) return;
      this.shared.deadlines.cancel(giveUp);
      waiters.delete(waiter);
      this.waiter = undefined;
    };
    this.waiter = waiter;
    waiters.add(waiter);
  }

  finish(answered: Answered): void {
    if (this.done) return;
    this.done = true;
    const { deadlines, waitingHedges, blockWaiters } = this.shared;
    for (const timer of this.timers) deadlines.cancel(timer);
    if (this.waitingHedge) waitingHedges.delete(this.waitingHedge);
    if (this.waiter) blockWaiters.delete(this.waiter);
    this.resolve(answered);
  }

  failed(): void {
    const error = this.lastError;
    this.finish(
      failureAnswer(
        this.plan.request.id,
        error ? { kind: "node", error } : { kind: "noNode", network: this.shared.network },
      ),
    );
  }

  /** Runs `task` in `ms` unless the call is done by then. */
  after(ms: number, task: () => void): Deadline {
    const timer = this.shared.deadlines.after(ms, () => {
      if (!this.done) task();
    });
    this.timers.push(timer);
    return timer;
  }

  choose(nothingInFlight: boolean): Candidate | undefined {
    return this.shared.choose(this.plan, this.tried, nothingInFlight);
  }

  retry(): boolean {
    return this.retries > 0 && this.launch("retry", this.choose(this.pending === 0)) && this.retries-- > 0;
  }

  /** Every attempt in flight is on a hung node. */
  stuck(): boolean {
    const { tracker } = this.shared;
    for (const attempt of this.attempts) if (!attempt.settled && !tracker.isHung(attempt.node)) return false;
    return true;
  }

  launch(kind: AttemptKind, choice: Candidate | undefined): boolean {
    const shared = this.shared;
    const { upstreams, metrics, network } = shared;
    const request = this.plan.request;
    if (!choice) return false;
    const node = choice.name;
    const attempt = new Attempt(this, node, kind);
    if (!upstreams.call(node, request, shared.upstreamTimeoutMs, this.raw, attempt)) return false;
    this.tried.add(node);
    // The autoscaler's count, as lightfleet_gateway_upstream_requests_total: what the gateway answers itself or
    // refuses never reaches a node and must not grow the pool.
    shared.count();
    if (kind === "retry") metrics.retries.inc({ network, reason: "failed" });
    if (kind === "hedge") metrics.hedges.inc({ network, outcome: "sent" });
    if (kind === "first") {
      shared.budget.earn();
      // The token may be a waiting read's, longest waiting first (this call's own hedge is not set up yet).
      for (const waiting of shared.waitingHedges) if (!waiting()) break;
    }
    // The answer comes in a later turn (Upstreams.call), so the attempt is complete before it can settle.
    attempt.ticket = shared.tracker.start(node, request.method);
    attempt.release = upstreams.acquire(node);
    this.attempts.push(attempt);
    shared.inFlight.n++;
    this.pending++;
    if (!this.idempotent) return true;
    // Past its node's hung bound this read moves on to another node (see atHungBound). One timer at a time per
    // attempt: the hedge, then the hung bound; a read moved on for a hung node needs no hedge. A larger budget goes
    // to a second hedge as well, to a third node, while the read is still unanswered (see hedgeQuantiles).
    const { tracker } = shared;
    const { ticket } = attempt;
    attempt.hungAfter = tracker.hungBoundOf(ticket);
    attempt.started = ticket.started;
    const hedgeAfter = kind === "first" && this.hedged ? tracker.hedgeDelayOf(ticket) : Infinity;
    if (hedgeAfter >= attempt.hungAfter) {
      this.after(attempt.hungAfter, () => attempt.onHung());
      return true;
    }
    const secondAfter = tracker.secondHedgeDelayOf(ticket);
    this.after(hedgeAfter, () => attempt.onHedgeDelay(hedgeAfter, secondAfter));
    return true;
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
