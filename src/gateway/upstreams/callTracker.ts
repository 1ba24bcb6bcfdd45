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

/** Below this many answers of a kind, a node's hedge delay is the configured maximum (nothing learnt yet). */
const MIN_SAMPLES = 10;

/** One call sent to a node, from start to answer or failure. */
export interface CallTicket {
  node: string;
  latencyClass: LatencyClass;
  started: number;
  id: number;
}

interface NodeRecord {
  byClass: Map<LatencyClass, LatencyWindow>;
  all: LatencyWindow;
  /** Calls in flight by ticket id, oldest first (a Map keeps insertion order). */
  outstanding: Map<number, number>;
  failedAt: number | undefined;
}

/**
 * What the gateway learns of each node from the calls it sends: recent latencies per kind of call, the calls still
 * outstanding, the last failure. Pure apart from the injected clock; the decisions it makes:
 * - a node is **hung** when a call of it is outstanding longer than `hungBound` (its own recent p99 times the
 *   multiplier, within min..max), and **failed** for `failureCooldown` after a call failed with no answer since:
 *   either way, calls avoid it while another node can serve;
 * - a read is **hedged** after `hedgeDelay`: the node's recent latency quantile for that kind of call, within
 *   minDelay..maxDelay (every node's, while the node has too few answers of its own).
 */
const NONE: ReadonlySet<string> = new Set();

export class CallTracker {
  private readonly nodes = new Map<string, NodeRecord>();
  /** Every node's answers per kind of call: the hedge delay of a node that has no history of its own yet. */
  private readonly pool = new Map<LatencyClass, LatencyWindow>();
  private nextId = 0;

  constructor(
    private readonly hedge: Pick<HedgeConfig, "quantile" | "minDelay" | "maxDelay">,
    private readonly hung: HungNodesConfig,
    private readonly now: () => number,
  ) {}

  start(node: string, method: string): CallTicket {
    const ticket = { node, latencyClass: latencyClass(method), started: this.now(), id: this.nextId++ };
    this.record(node).outstanding.set(ticket.id, ticket.started);
    return ticket;
  }

  /** The node answered (a result or a JSON-RPC error: either way it works). */
  answered(ticket: CallTicket): void {
    const record = this.record(ticket.node);
    record.outstanding.delete(ticket.id);
    const ms = this.now() - ticket.started;
    record.all.add(ms);
    let window = record.byClass.get(ticket.latencyClass);
    if (!window) record.byClass.set(ticket.latencyClass, (window = new LatencyWindow()));
    window.add(ms);
    let pooled = this.pool.get(ticket.latencyClass);
    if (!pooled) this.pool.set(ticket.latencyClass, (pooled = new LatencyWindow(256)));
    pooled.add(ms);
    record.failedAt = undefined;
  }

  /** The call failed without an answer (connection lost, timeout, garbled answer). */
  failed(ticket: CallTicket): void {
    const record = this.record(ticket.node);
    record.outstanding.delete(ticket.id);
    record.failedAt = this.now();
  }

  /** How long a call of this node may be outstanding before the node counts as hung. */
  hungBound(node: string): number {
    const p99 = this.nodes.get(node)?.all.quantile(0.99);
    const bound = p99 === undefined ? this.hung.max : p99 * this.hung.multiplier;
    return Math.min(this.hung.max, Math.max(this.hung.min, bound));
  }

  /**
   * When a read sent to this node now should go to a second node as well, in ms from now: the node's own quantile
   * for this kind of call, else (fewer than ten answers of its own yet) every node's, else maxDelay.
   */
  hedgeDelay(node: string, method: string): number {
    const kind = latencyClass(method);
    const own = this.nodes.get(node)?.byClass.get(kind);
    const pooled = this.pool.get(kind);
    const window =
      own && own.count >= MIN_SAMPLES ? own : pooled && pooled.count >= MIN_SAMPLES ? pooled : undefined;
    const learnt = window?.quantile(this.hedge.quantile);
    return Math.min(this.hedge.maxDelay, Math.max(this.hedge.minDelay, learnt ?? this.hedge.maxDelay));
  }

  isHung(node: string): boolean {
    const record = this.nodes.get(node);
    if (!record) return false;
    const oldest = record.outstanding.values().next();
    return !oldest.done && this.now() - oldest.value > this.hungBound(node);
  }

  recentlyFailed(node: string): boolean {
    const failedAt = this.nodes.get(node)?.failedAt;
    return failedAt !== undefined && this.now() - failedAt < this.hung.failureCooldown;
  }

  /** Nodes new calls should avoid now (hung or recently failed). */
  avoided(): ReadonlySet<string> {
    // Asked on every forwarded call, and almost always empty: no set made for that.
    let avoid: Set<string> | undefined;
    for (const name of this.nodes.keys())
      if (this.isHung(name) || this.recentlyFailed(name)) (avoid ??= new Set()).add(name);
    return avoid ?? NONE;
  }

  /** Forgets nodes that are no longer upstreams. */
  retain(names: ReadonlySet<string>): void {
    for (const name of this.nodes.keys()) if (!names.has(name)) this.nodes.delete(name);
  }

  private record(node: string): NodeRecord {
    let record = this.nodes.get(node);
    if (!record) {
      record = { byClass: new Map(), all: new LatencyWindow(), outstanding: new Map(), failedAt: undefined };
      this.nodes.set(node, record);
    }
    return record;
  }
}
