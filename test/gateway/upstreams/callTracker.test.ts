import { describe, expect, it } from "vitest";
import { hedgeSchema, hungNodesSchema } from "../../../src/config/sections/latency.js";
import type { Candidate } from "../../../src/gateway/upstreams/balancer.js";
import { CallTracker, hedgeQuantiles, latencyClass } from "../../../src/gateway/upstreams/callTracker.js";
import { chooseNode } from "../../../src/gateway/upstreams/chooseNode.js";
import { HedgeBudget } from "../../../src/gateway/upstreams/hedgeBudget.js";
import { LatencyWindow } from "../../../src/gateway/upstreams/latencyWindow.js";

/** A tracker with the default settings on a clock the test moves. */
function tracker(overrides: { hedge?: object; hung?: object } = {}) {
  const clock = { now: 1_000 };
  const t = new CallTracker(
    hedgeSchema.parse(overrides.hedge ?? {}),
    hungNodesSchema.parse(overrides.hung ?? {}),
    () => clock.now,
  );
  /** One call to NODE answered after MS. */
  const answer = (node: string, method: string, ms: number) => {
    const ticket = t.start(node, method);
    clock.now += ms;
    t.answered(ticket);
  };
  return { t, clock, answer };
}

describe("LatencyWindow", () => {
  it("gives nearest-rank quantiles of the most recent samples only", () => {
    const w = new LatencyWindow(10);
    expect(w.quantile(0.9)).toBeUndefined();
    for (let i = 1; i <= 10; i++) w.add(i);
    expect(w.quantile(0.5)).toBe(5);
    expect(w.quantile(0.9)).toBe(9);
    for (let i = 0; i < 10; i++) w.add(100 + i);
    expect(w.quantile(0.1)).toBe(100);
    expect(w.count).toBe(10);
  });

  it("keeps the quantiles of a window sorted afresh, sample after sample, with repeated values and wrap-around", () => {
    const size = 16;
    const w = new LatencyWindow(size);
    const recent: number[] = [];
    // A fixed pseudo-random sequence (a linear congruential generator): the same run every time.
    let seed = 7;
    for (let i = 0; i < 500; i++) {
      seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
      // Few distinct values, so equal samples enter and leave the window.
      const ms = (seed % 9) * 2.5;
      w.add(ms);
      recent.push(ms);
      if (recent.length > size) recent.shift();
      const sorted = [...recent].sort((a, b) => a - b);
      for (const q of [0, 0.1, 0.5, 0.9, 0.99, 1])
        expect(w.quantile(q)).toBe(
          sorted[Math.min(sorted.length, Math.max(1, Math.ceil(q * sorted.length))) - 1],
        );
      expect(w.count).toBe(recent.length);
    }
  });
});

describe("hedge delay", () => {
  it("is maxDelay until anything is learnt, then the node's p90 for that kind of call within min..max", () => {
    const { t, answer } = tracker({ hedge: { minDelay: "20ms", maxDelay: "1s" } });
    expect(t.hedgeDelay("a", "eth_call")).toBe(1_000);
    for (let i = 1; i <= 20; i++) answer("a", "eth_call", i * 10);
    expect(t.hedgeDelay("a", "eth_call")).toBe(180);
    expect(t.hedgeDelay("a", "eth_getBalance")).toBe(180);
    // Blocks are another kind of call: nothing learnt yet.
    expect(t.hedgeDelay("a", "eth_getBlockByNumber")).toBe(1_000);
    for (let i = 0; i < 20; i++) answer("a", "eth_getBlockByNumber", 1);
    expect(t.hedgeDelay("a", "eth_getBlockByNumber")).toBe(20);
    // A node without ten answers of its own takes every node's.
    expect(t.hedgeDelay("b", "eth_call")).toBe(180);
    for (let i = 0; i < 9; i++) answer("b", "eth_call", 700);
    expect(t.hedgeDelay("b", "eth_call")).toBe(700);
    for (let i = 0; i < 119; i++) answer("b", "eth_call", 5_000);
    expect(t.hedgeDelay("b", "eth_call")).toBe(1_000);
    expect(t.hedgeDelay("a", "eth_call")).toBe(180);
  });

  it("gives a started call the same hedge delays and hung bound as its node and method do", () => {
    const { t, answer } = tracker({ hedge: { budget: 0.32 } });
    const same = (node: string, method: string) => {
      const ticket = t.start(node, method);
      expect([t.hedgeDelayOf(ticket), t.secondHedgeDelayOf(ticket), t.hungBoundOf(ticket)]).toEqual([
        t.hedgeDelay(node, method),
        t.secondHedgeDelay(node, method),
        t.hungBound(node),
      ]);
      t.answered(ticket);
    };
    // No history; then every node's; then the node's own, per kind of call.
    same("a", "eth_call");
    for (let i = 1; i <= 30; i++) answer("b", "eth_call", i * 7);
    same("a", "eth_call");
    for (let i = 1; i <= 30; i++) answer("a", "eth_call", i * 3);
    for (let i = 1; i <= 30; i++) answer("a", "eth_getBlockByNumber", i);
    same("a", "eth_call");
    same("a", "eth_getBlockByNumber");
    same("a", "eth_getLogs");
    same("b", "eth_getBalance");
  });

  it("follows the budget: hedged after the node's (1 - budget) quantile, unless a quantile is configured", () => {
    const spread = (t: ReturnType<typeof tracker>) => {
      for (let i = 1; i <= 100; i++) t.answer("a", "eth_call", i * 10);
    };
    const small = tracker({ hedge: { budget: 0.05 } });
    spread(small);
    expect(small.t.hedgeDelay("a", "eth_call")).toBe(950);
    expect(small.t.secondHedgeDelay("a", "eth_call")).toBeUndefined();
    // From 15% on, two hedges: after the (1 - 0.75 b) and the (1 - 0.6 b) quantiles.
    const byBudget = tracker({ hedge: { budget: 0.32 } });
    spread(byBudget);
    expect(byBudget.t.hedgeDelay("a", "eth_call")).toBe(760);
    expect(byBudget.t.secondHedgeDelay("a", "eth_call")).toBe(810);
    const explicit = tracker({ hedge: { budget: 0.32, quantile: 0.9 } });
    spread(explicit);
    expect(explicit.t.hedgeDelay("a", "eth_call")).toBe(900);
    expect(explicit.t.secondHedgeDelay("a", "eth_call")).toBeUndefined();
    expect(hedgeQuantiles({ budget: 0.1 })).toEqual({ first: 0.9 });
    // Kept within the range a configured quantile may take.
    expect(hedgeQuantiles({ budget: 0.9 })).toEqual({ first: 0.5, second: 0.5 });
    expect(hedgeQuantiles({ budget: 0 })).toEqual({ first: 0.999 });
  });

  it("classes calls as state reads, logs and the rest", () => {
    expect(latencyClass("eth_call")).toBe("state");
    expect(latencyClass("eth_getProof")).toBe("state");
    expect(latencyClass("eth_getLogs")).toBe("logs");
    expect(latencyClass("eth_getBlockByHash")).toBe("other");
  });
});

describe("hung and failed nodes", () => {
  it("a node is hung once a call of it is outstanding past multiplier x its own p99 (within min..max) with no answer of that kind since", () => {
    const { t, clock, answer } = tracker({ hung: { multiplier: 4, min: "300ms", max: "1500ms" } });
    // No history: the bound is the maximum.
    expect(t.hungBound("a")).toBe(1_500);
    for (let i = 0; i < 100; i++) answer("a", "eth_call", 10);
    expect(t.hungBound("a")).toBe(300);
    for (let i = 0; i < 100; i++) answer("b", "eth_call", 200);
    expect(t.hungBound("b")).toBe(800);
    const ticket = t.start("a", "eth_call");
    clock.now += 299;
    expect(t.isHung("a")).toBe(false);
    expect(t.hungIn("a")).toBe(1);
    expect(t.avoided()).toEqual(new Set());
    clock.now += 1;
    expect(t.isHung("a")).toBe(true);
    expect(t.avoided()).toEqual(new Set(["a"]));
    // An answer of another kind (a block from the node's own store) is no sign that its state reads move.
    answer("a", "eth_getBlockByNumber", 5);
    expect(t.isHung("a")).toBe(true);
    // A later state read answered is: the node is slow on that one read, not hung, until the bound passes again
    // with no answer.
    answer("a", "eth_call", 5);
    expect(t.isHung("a")).toBe(false);
    expect(t.hungIn("a")).toBe(300);
    clock.now += 300;
    expect(t.isHung("a")).toBe(true);
    t.answered(ticket);
    expect(t.isHung("a")).toBe(false);
    expect(t.hungIn("a")).toBe(Infinity);
  });

  it("a node whose call failed is avoided for failureCooldown, or until it answers", () => {
    const { t, clock, answer } = tracker({ hung: { failureCooldown: "2s" } });
    t.failed(t.start("a", "eth_call"));
    expect(t.avoided()).toEqual(new Set(["a"]));
    clock.now += 1_999;
    expect(t.recentlyFailed("a")).toBe(true);
    clock.now += 1;
    expect(t.recentlyFailed("a")).toBe(false);
    t.failed(t.start("a", "eth_call"));
    answer("a", "eth_call", 1);
    expect(t.avoided()).toEqual(new Set());
  });
});

describe("HedgeBudget", () => {
  it("allows one extra call per 1/share calls sent, up to the burst", () => {
    const budget = new HedgeBudget(0.1, 3);
    // Empty to start with: a fresh process has earned nothing.
    expect(budget.take()).toBe(false);
    for (let i = 0; i < 9; i++) budget.earn();
    expect(budget.take()).toBe(false);
    budget.earn();
    expect(budget.take()).toBe(true);
    expect(budget.take()).toBe(false);
    // A long quiet spell saves at most the burst.
    for (let i = 0; i < 1_000; i++) budget.earn();
    expect([budget.take(), budget.take(), budget.take(), budget.take()]).toEqual([true, true, true, false]);
    expect(new HedgeBudget(0, 10).take()).toBe(false);
  });

  it("never lets the extra calls from a fresh start exceed share x calls, at any point of the run", () => {
    for (const share of [0.1, 0.32, 0.05]) {
      const budget = new HedgeBudget(share, 10);
      let extra = 0;
      for (let calls = 1; calls <= 2_000; calls++) {
        budget.earn();
        // Every call wants as many extra calls as it can get.
        while (budget.take()) extra++;
        expect(extra, `share ${share} after ${calls} calls`).toBeLessThanOrEqual(
          Math.floor(share * calls + 1e-9),
        );
      }
      expect(extra).toBe(Math.floor(share * 2_000 + 1e-9));
    }
  });

  it("counts an extra call that had to go as owed: no hedge until later calls have paid it back", () => {
    const budget = new HedgeBudget(0.1, 10);
    for (let i = 0; i < 10; i++) budget.earn();
    budget.charge();
    budget.charge();
    // One token earned, two spent: the next ten calls repay the debt, ten more earn the next token.
    for (let i = 0; i < 19; i++) {
      budget.earn();
      expect(budget.take()).toBe(false);
    }
    budget.earn();
    expect(budget.take()).toBe(true);
  });
});

describe("chooseNode", () => {
  const node = (name: string, outstanding = 0, extra: Partial<Candidate> = {}): Candidate => ({
    name,
    routed: true,
    reachable: true,
    head: 10,
    outstanding,
    ...extra,
  });
  /** By default the call has an attempt in flight exactly when it tried a node (a hedge or a move off a hung node). */
  const choose = (
    candidates: Candidate[],
    tried: string[],
    avoid: string[],
    holders?: string[],
    nothingInFlight = tried.length === 0,
  ) =>
    chooseNode({
      candidates,
      minBlock: 5,
      tried: new Set(tried),
      avoid: new Set(avoid),
      nothingInFlight,
      holders: holders ? new Set(holders) : undefined,
      turn: 0,
    })?.name;

  it("never sends a retry to a node tried or just failed while another routed node is left", () => {
    const nodes = [node("a"), node("b", 3), node("c", 5)];
    expect(choose(nodes, [], [])).toBe("a");
    expect(choose(nodes, ["a"], [])).toBe("b");
    // b just failed (another call's retry): c, though busier.
    expect(choose(nodes, ["a"], ["b"])).toBe("c");
    // A retry never goes to a node passed over (hung, or another call's failure), nor to one tried.
    expect(choose(nodes, ["a", "c"], ["b"])).toBeUndefined();
    // A first attempt with only such nodes left: better one of them than no answer.
    expect(choose(nodes, [], ["a", "b", "c"])).toBe("a");
    expect(choose(nodes, ["a", "b", "c"], [])).toBeUndefined();
  });

  it("retries a read whose only attempt failed on a node passed over when no other is left, rather than failing it", () => {
    const nodes = [node("a"), node("b", 3), node("c", 5)];
    // a refused the connection; b and c are hung (busy on a loaded machine) or just failed another call.
    expect(choose(nodes, ["a"], ["b", "c"], undefined, true)).toBe("b");
    // Still never a node tried, and one not passed over first.
    expect(choose(nodes, ["a"], ["b"], undefined, true)).toBe("c");
    expect(choose(nodes, ["a", "b", "c"], [], undefined, true)).toBeUndefined();
  });

  it("keeps to routed nodes and to the holders of a block asked by hash", () => {
    const nodes = [node("a"), node("b", 0, { routed: false }), node("c", 9)];
    expect(choose(nodes, ["a"], [])).toBe("c");
    expect(choose(nodes, [], [], ["c"])).toBe("c");
    expect(choose(nodes, [], ["a"], ["a"])).toBe("c");
  });
});
