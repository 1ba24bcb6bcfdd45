import type { HedgeConfig, HungNodesConfig } from "../../config/sections/latency.js";
import { LatencyWindow } from "./latencyWindow.js";
import { STATE_READ_METHODS } from "../../rpc/stateReads.js";

/**
 * Kinds of call whose latencies are learnt apart: a light node answers state reads after fetching state from its
 * peers (slow at random), logs after a scan, the rest (blocks, receipts, fees) from what it holds.
 */
export type LatencyClass = "state" | "logs" | "other";

export function latencyClass(method: string): LatencyClass {
  if (STATE_READ_METHODS.has(method)) return "state";
  return method === "eth_getLogs" ? "logs" : "other";
}

/**
 * The quantiles of a node's recent latency after which a read is hedged: the configured one (one hedge), else from
 * the budget b. A read hedged at the (1 - b) quantile is about a share b of the reads, so the trigger spends the
 * budget rather than a fixed p90 leaving a larger budget unused. From a budget of 15% on, the budget goes to two
 * hedges, the first at the (1 - 0.75 b) quantile and the second, to a third node, at the (1 - 0.6 b) quantile of
 * the first node's latency: with a heavy tail (log-normal, p50 50 ms, p99 2 s), the best pair of hedges spending
 * 27.5% extra calls gives a p99 of about 340 ms where the best single hedge gives about 455 ms; at 10% a second
 * hedge buys nothing (both about 607 ms), so a small budget keeps one. Kept to the configurable range (0.5..0.999).
 */
export function hedgeQuantiles(hedge: Pick<HedgeConfig, "quantile" | "budget">): {
  first: number;
  second?: number;
} {
  const within = (q: number) => Math.min(0.999, Math.max(0.5, q));
  if (hedge.quantile !== undefined) return { first: hedge.quantile };
  if (hedge.budget < TWO_HEDGES_FROM) return { first: within(1 - hedge.budget) };
  return { first: within(1 - 0.75 * hedge.budget), second: within(1 - 0.6 * hedge.budget) };
}

/** The budget from which a read may be hedged twice (see hedgeQuantiles). */
const TWO_HEDGES_FROM = 0.15;

/** Below this many answers of a kind, a node's hedge delay is the configured maximum (nothing learnt yet). */
const MIN_SAMPLES = 10;

/** One call sent to a node, from start to answer or failure. */
export interface CallTicket {
  node: string;
  latencyClass: LatencyClass;
  started: number;
  id: number;
  /**
   * The node's records it counts in, found once as it starts (a node forgotten meanwhile keeps them to itself): its
   * answer and the call's hedge delay and hung bound are then worked out with no look-up.
   */
  readonly record: NodeRecord;
  readonly kind: ClassRecord;
}

/** One node's calls of one kind: recent latencies, the calls in flight, the last answer. */
export interface ClassRecord {
  window: LatencyWindow;
  /** Calls in flight by ticket id to their start, oldest first (a Map keeps insertion order). */
  outstanding: Map<number, number>;
  /** When the node last answered a call of this kind. */
  answeredAt: number;
}

export interface NodeRecord {
  byClass: Map<LatencyClass, ClassRecord>;
  all: LatencyWindow;
  failedAt: number | undefined;
}

/**
 * What the gateway learns of each node from the calls it sends: recent latencies per kind of call, the calls still
 * outstanding, the last failure. Pure apart from the injected clock; the decisions it makes:
 * - a node is **hung** when, for one kind of call, it has had a call outstanding and answered none of that kind for
 *   longer than `hungBound` (its own recent p99 times the multiplier, within min..max); and **failed** for
 *   `failureCooldown` after a call failed with no answer since: either way, calls avoid it while another node can
 *   serve. A light node slow at random keeps answering its other reads while one waits for state from its peers:
 *   that one read is for a hedge, the node is not hung (judged hung, it would be passed over for hedges and
 *   first attempts whenever one of its reads is in the slow tail);
 * - a read is **hedged** after `hedgeDelay`: the node's recent latency quantile for that kind of call (see
 *   hedgeQuantile), within minDelay..maxDelay (every node's, while the node has too few answers of its own).
 */
const NONE: ReadonlySet<string> = new Set();

export class CallTracker {
  private readonly nodes = new Map<string, NodeRecord>();
  /** Every node's answers per kind of call: the hedge delay of a node that has no history of its own yet. */
  private readonly pool = new Map<LatencyClass, LatencyWindow>();
  private nextId = 0;
  private readonly quantiles: { first: number; second?: number };

  constructor(
    private readonly hedge: Pick<HedgeConfig, "quantile" | "budget" | "minDelay" | "maxDelay">,
    private readonly hung: HungNodesConfig,
    private readonly now: () => number,
  ) {
    this.quantiles = hedgeQuantiles(hedge);
  }

  start(node: string, method: string): CallTicket {
    const record = this.record(node);
    const kindOf = latencyClass(method);
    const kind = classRecordOf(record, kindOf);
    const ticket = { node, latencyClass: kindOf, started: this.now(), id: this.nextId++, record, kind };
    kind.outstanding.set(ticket.id, ticket.started);
    return ticket;
  }

  /** The node answered (a result or a JSON-RPC error: either way it works). */
  answered(ticket: CallTicket): void {
    const { record, kind } = ticket;
    kind.outstanding.delete(ticket.id);
    const now = this.now();
    const ms = now - ticket.started;
    kind.answeredAt = now;
    record.all.add(ms);
    kind.window.add(ms);
    let pooled = this.pool.get(ticket.latencyClass);
    if (!pooled) this.pool.set(ticket.latencyClass, (pooled = new LatencyWindow(256)));
    pooled.add(ms);
    record.failedAt = undefined;
  }

  /** The call failed without an answer (connection lost, timeout, garbled answer). */
  failed(ticket: CallTicket): void {
    ticket.kind.outstanding.delete(ticket.id);
    ticket.record.failedAt = this.now();
  }

  /** How long a call of this node may be outstanding before the node counts as hung. */
  hungBound(node: string): number {
    return this.boundOf(this.nodes.get(node));
  }

  /** hungBound of a call's node, as it starts. */
  hungBoundOf(ticket: CallTicket): number {
    return this.boundOf(ticket.record);
  }

  private boundOf(record: NodeRecord | undefined): number {
    const p99 = record?.all.quantile(0.99);
    const bound = p99 === undefined ? this.hung.max : p99 * this.hung.multiplier;
    return Math.min(this.hung.max, Math.max(this.hung.min, bound));
  }

  /**
   * When a read sent to this node now should go to a second node as well, in ms from now: the node's own quantile
   * for this kind of call, else (fewer than ten answers of its own yet) every node's, else maxDelay.
   */
  hedgeDelay(node: string, method: string): number {
    const kind = latencyClass(method);
    return this.delayAt(this.nodes.get(node)?.byClass.get(kind), kind, this.quantiles.first);
  }

  /** When such a read, still unanswered, should go to a third node too; undefined: one hedge only. */
  secondHedgeDelay(node: string, method: string): number | undefined {
    const kind = latencyClass(method);
    const quantile = this.quantiles.second;
    return quantile === undefined
      ? undefined
      : this.delayAt(this.nodes.get(node)?.byClass.get(kind), kind, quantile);
  }

  /** hedgeDelay of a call, as it starts. */
  hedgeDelayOf(ticket: CallTicket): number {
    return this.delayAt(ticket.kind, ticket.latencyClass, this.quantiles.first);
  }

  /** secondHedgeDelay of a call, as it starts. */
  secondHedgeDelayOf(ticket: CallTicket): number | undefined {
    const quantile = this.quantiles.second;
    return quantile === undefined ? undefined : this.delayAt(ticket.kind, ticket.latencyClass, quantile);
  }

  private delayAt(record: ClassRecord | undefined, kind: LatencyClass, quantile: number): number {
    const own = record?.window;
    const pooled = this.pool.get(kind);
    const window =
      own && own.count >= MIN_SAMPLES ? own : pooled && pooled.count >= MIN_SAMPLES ? pooled : undefined;
    const learnt = window?.quantile(quantile);
    return Math.min(this.hedge.maxDelay, Math.max(this.hedge.minDelay, learnt ?? this.hedge.maxDelay));
  }

  isHung(node: string): boolean {
    return this.hungIn(node) <= 0;
  }

  /**
   * In how many ms the node counts as hung if it answers nothing meanwhile (0 or less: it is hung now); Infinity
   * while it has no call outstanding. Per kind of call: the time since its oldest call of that kind started or since
   * it last answered one of that kind, whichever is later, against the node's bound.
   */
  hungIn(node: string): number {
    const record = this.nodes.get(node);
    return record ? this.hungInAt(record, this.now()) : Infinity;
  }

  private hungInAt(record: NodeRecord, now: number): number {
    let soonest = Infinity;
    let bound: number | undefined;
    for (const kind of record.byClass.values()) {
      const oldest = kind.outstanding.values().next();
      if (oldest.done) continue;
      bound ??= this.boundOf(record);
      soonest = Math.min(soonest, Math.max(oldest.value, kind.answeredAt) + bound - now);
    }
    return soonest;
  }

  recentlyFailed(node: string): boolean {
    const failedAt = this.nodes.get(node)?.failedAt;
    return failedAt !== undefined && this.now() - failedAt < this.hung.failureCooldown;
  }

  /** Nodes new calls should avoid now (hung or recently failed). */
  avoided(): ReadonlySet<string> {
    // Asked on every forwarded call, and almost always empty: no set made for that, one clock reading for every node.
    let avoid: Set<string> | undefined;
    const now = this.now();
    for (const [name, record] of this.nodes) {
      const failed = record.failedAt !== undefined && now - record.failedAt < this.hung.failureCooldown;
      if (failed || this.hungInAt(record, now) <= 0) (avoid ??= new Set()).add(name);
    }
    return avoid ?? NONE;
  }

  /** Forgets nodes that are no longer upstreams. */
  retain(names: ReadonlySet<string>): void {
    for (const name of this.nodes.keys()) if (!names.has(name)) this.nodes.delete(name);
  }

  private record(node: string): NodeRecord {
    let record = this.nodes.get(node);
    if (!record) {
      record = { byClass: new Map(), all: new LatencyWindow(), failedAt: undefined };
      this.nodes.set(node, record);
    }
    return record;
  }
}

/** A node's record of one kind of call, made on first use. */
function classRecordOf(record: NodeRecord, latencyClass: LatencyClass): ClassRecord {
  let kind = record.byClass.get(latencyClass);
  if (!kind) {
    kind = { window: new LatencyWindow(), outstanding: new Map(), answeredAt: -Infinity };
    record.byClass.set(latencyClass, kind);
  }
  return kind;
}
