import { describe, expect, it } from "vitest";
import {
  DEFAULT_WRITE_THROTTLE,
  WriteBudget,
  pickWrites,
  sentNow,
  writeCandidate,
  writeNeed,
  type SentStatus,
  type StatusNews,
} from "../../../src/kubernetes/status/writeThrottle.js";

const T0 = Date.UTC(2026, 10, 27, 12);
const options = DEFAULT_WRITE_THROTTLE;
const news = (head: number, lag = 0, state = "Healthy"): StatusNews => ({
  change: state,
  progress: `${head}/${lag}`,
  measure: lag,
});

describe("when a status is written", () => {
  it("a change at once, progress no sooner than the interval after the last write, nothing new every 30 s", () => {
    const sent = sentNow(news(100), T0, options);
    expect(writeNeed(undefined, news(100), T0, options)).toBe("change");
    expect(writeNeed(sent, news(100, 0, "Lagging"), T0 + 1, options)).toBe("change");
    expect(writeNeed(sent, news(101), T0 + 1_999, options)).toBeUndefined();
    expect(writeNeed(sent, news(101), T0 + 2_000, options)).toBe("progress");
    expect(writeNeed(sent, news(100), T0 + 29_999, options)).toBeUndefined();
    expect(writeNeed(sent, news(100), T0 + 30_000, options)).toBe("refresh");
    // A first refresh spread later by an offset; progress is not held by it.
    const spread = sentNow(news(100), T0, options, 12_000);
    expect(writeNeed(spread, news(100), T0 + 30_000, options)).toBeUndefined();
    expect(writeNeed(spread, news(100), T0 + 42_000, options)).toBe("refresh");
    expect(writeNeed(spread, news(102), T0 + 2_000, options)).toBe("progress");
  });

  it("the budget: progress only with a token left; changes spend without waiting; it refills at the rate, up to the burst", () => {
    const budget = new WriteBudget({ writesPerSecond: 10, burst: 10 });
    for (let i = 0; i < 10; i++) expect(budget.tryTake(T0)).toBe(true);
    expect(budget.tryTake(T0)).toBe(false);
    budget.spend(T0); // a change goes anyway, the budget stays at empty
    expect(budget.tryTake(T0 + 99)).toBe(false);
    expect(budget.tryTake(T0 + 100)).toBe(true);
    // A long quiet spell saves up the burst, no more.
    let taken = 0;
    while (budget.tryTake(T0 + 60_000)) taken++;
    expect(taken).toBe(10);
    // A clock that steps back (another pool's round read earlier) adds nothing and takes nothing away.
    expect(budget.tryTake(T0 + 59_000)).toBe(false);
    expect(() => new WriteBudget({ writesPerSecond: 0, burst: 10 })).toThrow(/writesPerSecond/);
  });

  it("picks every change even with the budget spent, then progress the most wrong first, then the longest unwritten", () => {
    const budget = new WriteBudget({ writesPerSecond: 1, burst: 2 });
    const at = (writtenAt: number, lag = 0): SentStatus => sentNow(news(100, lag), writtenAt, options);
    const candidates = [
      { id: "old", ...writeCandidate("progress", at(T0 - 9_000), news(110)) },
      { id: "recent", ...writeCandidate("progress", at(T0 - 3_000), news(104)) },
      { id: "lagging", ...writeCandidate("progress", at(T0 - 2_000, 1), news(100, 4)) },
      { id: "flip-1", ...writeCandidate("change", at(T0 - 1_000), news(100, 0, "Lagging")) },
      { id: "flip-2", ...writeCandidate("change", undefined, news(100)) },
      { id: "flip-3", ...writeCandidate("refresh", at(T0 - 30_000), news(100)) },
    ];
    // The three changes spend the burst of 2: no progress this round.
    expect(pickWrites(candidates, budget, T0).map((c) => c.id)).toEqual(["flip-1", "flip-2", "flip-3"]);
    // Two seconds later two tokens: the growing lag first, then the oldest head.
    const progress = candidates.filter((c) => c.need === "progress");
    expect(pickWrites(progress, budget, T0 + 2_000).map((c) => c.id)).toEqual(["lagging", "old"]);
  });
});

/**
 * A fleet under the throttle, on a virtual clock: POOLS pools of NODES nodes on a chain with a block every second,
 * each pool's round every `roundMs` (pools staggered across the second), a node stalling now and then, and the writes
 * each round picks counted per second.
 */
function simulateFleet(input: {
  pools: number;
  nodes: number;
  roundMs: number;
  seconds: number;
  budget?: { writesPerSecond: number; burst: number };
}) {
  const { pools, nodes, roundMs, seconds } = input;
  const budget = new WriteBudget(input.budget ?? options);
  const sent = new Map<string, SentStatus>();
  const perSecond = new Array<number>(seconds).fill(0);
  const stalledAt = new Map<string, number>();
  let worstHealthyTrail = 0;
  let worstLagMiss = 0;
  let stateWrites = 0;
  let stateWritesLate = 0;
  for (let t = 0; t < seconds * 1000; t += roundMs) {
    for (let p = 0; p < pools; p++) {
      const now = T0 + t + Math.floor((p * roundMs) / pools);
      const chain = Math.floor((now - T0) / 1000);
      const round: Array<{ id: string; news: StatusNews } & ReturnType<typeof writeCandidate>> = [];
      // The pool's own status: its reference head moves with the chain.
      const reference = news(chain, 0, "Ready");
      const poolNeed = writeNeed(sent.get(`pool-${p}`), reference, now, options);
      if (poolNeed)
        round.push({
          id: `pool-${p}`,
          news: reference,
          ...writeCandidate(poolNeed, sent.get(`pool-${p}`), reference),
        });
      for (let n = 0; n < nodes; n++) {
        const id = `pool-${p}/light-${n}`;
        // Every 40 s, node (cycle mod NODES) of each pool stalls for 20 s: its lag grows, then it is Lagging, then heals.
        const cycle = Math.floor(chain / 40);
        const stalled = n === cycle % nodes && chain % 40 >= 10 && chain % 40 < 30;
        if (stalled && !stalledAt.has(id)) stalledAt.set(id, chain);
        if (!stalled) stalledAt.delete(id);
        const head = stalled ? stalledAt.get(id)! : chain;
        const lag = chain - head;
        const next = news(head, lag, lag > 3 ? "Lagging" : "Healthy");
        const need = writeNeed(sent.get(id), next, now, options);
        if (need) round.push({ id, news: next, ...writeCandidate(need, sent.get(id), next) });
      }
      // What `kubectl get ln` shows against the truth just before this round's writes (its stalest), once the first
      // writes are out.
      if (t >= 5_000) {
        worstHealthyTrail = Math.max(
          worstHealthyTrail,
          chain - Number(sent.get(`pool-${p}`)!.progress.split("/")[0]),
        );
        for (let n = 0; n < nodes; n++) {
          const id = `pool-${p}/light-${n}`;
          const [head, lag] = sent.get(id)!.progress.split("/").map(Number) as [number, number];
          const trueLag = stalledAt.has(id) ? chain - stalledAt.get(id)! : 0;
          // A node shown in sync: how far its HEAD trails. A node behind: how much of its lag is not shown yet. (A
          // node that just caught up shows its old lag until its state change, written in its next round.)
          if (trueLag === 0 && lag === 0) worstHealthyTrail = Math.max(worstHealthyTrail, chain - head);
          if (trueLag > 0) worstLagMiss = Math.max(worstLagMiss, trueLag - lag);
        }
      }
      const picked = new Set(pickWrites(round, budget, now).map((c) => c.id));
      for (const c of round) {
        if (c.need === "change" && sent.has(c.id) && c.id.includes("/")) {
          stateWrites++;
          if (!picked.has(c.id)) stateWritesLate++;
        }
        if (!picked.has(c.id)) continue;
        sent.set(c.id, sentNow(c.news, now, options));
        perSecond[Math.floor((now - T0) / 1000)]!++;
      }
    }
  }
  const steady = perSecond.slice(5);
  return {
    peakPerSecond: Math.max(...steady),
    meanPerSecond: steady.reduce((a, b) => a + b, 0) / steady.length,
    worstHealthyTrail,
    worstLagMiss,
    stateWrites,
    stateWritesLate,
  };
}

describe("API writes of a fleet under the throttle (virtual clock, a block a second)", () => {
  it("100 nodes probed every second: 10 writes a second, not 50; a growing lag shown within 2 blocks, heads within 22", () => {
    const fleet = simulateFleet({ pools: 10, nodes: 10, roundMs: 1_000, seconds: 300 });
    console.info(`100 nodes, 1 s rounds: ${JSON.stringify(fleet)}`);
    // Without the cap every node and pool would be written every 2 s: 55 writes a second.
    const uncapped = simulateFleet({
      pools: 10,
      nodes: 10,
      roundMs: 1_000,
      seconds: 300,
      budget: { writesPerSecond: Infinity, burst: Infinity },
    });
    console.info(`100 nodes, 1 s rounds, no cap: ${JSON.stringify(uncapped)}`);
    expect(uncapped.meanPerSecond).toBeGreaterThan(50);
    expect(fleet.meanPerSecond).toBeLessThanOrEqual(options.writesPerSecond + 1);
    expect(fleet.peakPerSecond).toBeLessThanOrEqual(options.burst + options.writesPerSecond);
    // A growing lag goes first: half the time a node of every pool stalls and takes a write every 2 s (5 a second),
    // so the 90 in-sync nodes and the 10 pools share the other 5: each head is written about every 20 s then, every
    // 11 s otherwise (the 30 s refresh it replaces aside).
    expect(fleet.worstHealthyTrail).toBeLessThanOrEqual(22);
    expect(fleet.worstLagMiss).toBeLessThanOrEqual(2);
    // Every state change was written in its own round.
    expect(fleet.stateWrites).toBeGreaterThan(0);
    expect(fleet.stateWritesLate).toBe(0);
  });

  it("a small pool (3 nodes, 2 s probes): every node's head at most a probe and the interval behind", () => {
    const fleet = simulateFleet({ pools: 1, nodes: 3, roundMs: 2_000, seconds: 300 });
    console.info(`3 nodes, 2 s rounds: ${JSON.stringify(fleet)}`);
    expect(fleet.worstHealthyTrail).toBeLessThanOrEqual(3);
    expect(fleet.worstLagMiss).toBeLessThanOrEqual(2);
    // Four objects (three nodes and the pool), each written every 2 s.
    expect(fleet.meanPerSecond).toBeLessThanOrEqual(2);
    expect(fleet.stateWritesLate).toBe(0);
  });
});
