import { describe, expect, it } from "vitest";
import type { NodeObservation, NodeState } from "../../src/health/types.js";
import {
  Scenario,
  T0,
  allDecisions,
  block,
  decisionsOf,
  networkParams,
  node,
  peer,
  statusOf,
} from "./scenario.js";

const PROBE = 2_000;
const headAt = (now: number) => 1000 + Math.floor((now - T0) / 12_000);

describe("node condition and state after a few probes against reference 1000", () => {
  const ref = block(1000);
  it.each<
    [
      string,
      Record<string, unknown>,
      NodeObservation,
      { state: NodeState; reason: string; routed: boolean; head?: number },
    ]
  >([
    ["in sync", {}, node("n", 1000), { state: "Healthy", reason: "ok", routed: true }],
    [
      "ahead of the reference (saw a block first)",
      {},
      node("n", 1001),
      { state: "Healthy", reason: "ok", routed: true },
    ],
    [
      "3 blocks behind, at maxLagBlocks",
      {},
      node("n", 997),
      { state: "Healthy", reason: "ok", routed: true },
    ],
    [
      "4 blocks behind, over maxLagBlocks",
      {},
      node("n", 996),
      { state: "Lagging", reason: "lag", routed: false },
    ],
    [
      "2 blocks behind but 40 s older than the reference, over maxLagSeconds (36 s)",
      {},
      node("n", 998, { head: { ...block(998), timestamp: ref.timestamp - 40 } }),
      { state: "Lagging", reason: "lag", routed: false },
    ],
    [
      "the lag threshold in seconds is per network",
      { maxLagSeconds: "60s" },
      node("n", 998, { head: { ...block(998), timestamp: ref.timestamp - 40 } }),
      { state: "Healthy", reason: "ok", routed: true },
    ],
    ["40 blocks behind", {}, node("n", 960), { state: "Lagging", reason: "lag", routed: false }],
    [
      "eth_syncing",
      {},
      node("n", 1000, { syncing: true }),
      { state: "Lagging", reason: "syncing", routed: false },
    ],
    [
      "eth_syncing with syncingIsUnhealthy off",
      { syncingIsUnhealthy: false },
      node("n", 1000, { syncing: true }),
      { state: "Healthy", reason: "ok", routed: true },
    ],
    [
      "wrong chain id",
      {},
      node("n", 1000, { chainId: 5 }),
      { state: "Diverged", reason: "wrong-chain", routed: false },
    ],
    [
      "another hash at the settled check height",
      {},
      node("n", 1000, { check: { number: 998, hash: "0xfork-998" } }),
      { state: "Diverged", reason: "hash-mismatch", routed: false },
    ],
    [
      "a node on a fork racing ahead looks in sync, but its settled hash gives it away",
      {},
      node("n", 1500, { chain: "fork", check: { number: 998, hash: "0xfork-998" } }),
      { state: "Diverged", reason: "hash-mismatch", routed: false, head: 1500 },
    ],
    [
      "the same hash at the check height",
      {},
      node("n", 1000, { check: { number: 998, hash: "0xmain-998" } }),
      { state: "Healthy", reason: "ok", routed: true },
    ],
    [
      "no block at the check height yet (behind) is not divergence",
      {},
      node("n", 1000, { check: { number: 998, hash: null } }),
      { state: "Healthy", reason: "ok", routed: true },
    ],
    [
      "another hash above the settled depth is a possible reorg, not divergence",
      {},
      node("n", 1000, { check: { number: 1000, hash: "0xfork-1000" } }),
      { state: "Healthy", reason: "ok", routed: true },
    ],
    [
      "probe failed",
      {},
      node("n", undefined, { reachable: false, error: "timeout after 1500 ms" }),
      { state: "Unresponsive", reason: "unresponsive", routed: false },
    ],
    [
      "never reported a head",
      {},
      node("n", undefined),
      { state: "Lagging", reason: "no-head", routed: false },
    ],
    ["height 0", {}, node("n", 0), { state: "Lagging", reason: "height-zero", routed: false }],
  ])("%s", (_title, health, observation, expected) => {
    const sc = new Scenario(networkParams(health));
    const outputs = sc.run(3, PROBE, () => ({
      peers: [peer("a", 1000), peer("b", 1000)],
      nodes: [observation],
    }));
    expect(statusOf(outputs.at(-1)!, "n")).toMatchObject(expected);
    expect(allDecisions(outputs, "restart")).toEqual([]);
  });

  it("asks the probes for the settled check height, reference minus settledDepth", () => {
    const sc = new Scenario(networkParams({ settledDepth: 5 }));
    const out = sc.round({ peers: [peer("a", 1000)], nodes: [node("n", 1000)] });
    expect(out.checkHeight).toBe(995);
  });
});

describe("Starting", () => {
  it("a new node behind stays Starting (no restart) within the grace, then becomes Healthy after healthyAfter probes", () => {
    const sc = new Scenario();
    const startedAt = T0;
    // Catches up 10 blocks per probe from block 0, from 5 minutes in: lag far beyond restartLagBlocks meanwhile.
    const outputs = sc.run(300, PROBE, (_i, now) => {
      const head =
        now < T0 + 300_000 ? 100 : Math.min(headAt(now), 100 + ((now - T0 - 300_000) / PROBE) * 10);
      return {
        peers: [peer("a", headAt(now))],
        nodes: [node("new", head, { startedAt, routed: false })],
      };
    });
    const states = outputs.map((o) => statusOf(o, "new").state);
    const firstHealthy = states.indexOf("Healthy");
    expect(states.slice(0, firstHealthy).every((s) => s === "Starting")).toBe(true);
    expect(allDecisions(outputs, "restart")).toEqual([]);
    expect(allDecisions(outputs, "route")).toEqual(["new"]);
    // Three good probes in a row: the index is that of the third one after the head reached the reference.
    const caughtUp = outputs.findIndex((o) => statusOf(o, "new").reason === "ok");
    expect(firstHealthy).toBe(caughtUp + 2);
  });

  it("a node still behind when the grace ends is Lagging and then restarted", () => {
    const sc = new Scenario(networkParams({ startupGrace: "1m" }));
    const outputs = sc.run(100, PROBE, (_i, now) => ({
      peers: [peer("a", headAt(now))],
      nodes: [node("slow", 10, { startedAt: T0, routed: false })],
    }));
    const states = outputs.map((o) => statusOf(o, "slow").state);
    expect(states[28]).toBe("Starting"); // T0 + 58 s
    expect(states[30]).toBe("Lagging"); // T0 + 62 s
    // The restart clock starts when the grace ends (60 s): restartAfter 120 s later.
    const restartAt = outputs.findIndex((o) => decisionsOf(o, "restart").length > 0);
    expect(sc.now - (outputs.length - 1 - restartAt) * PROBE - T0).toBe(180_000);
  });

  it("a starting node that does not answer becomes Unresponsive after unhealthyAfter probes", () => {
    const sc = new Scenario();
    const outputs = sc.run(3, PROBE, () => ({
      peers: [peer("a", 1000)],
      nodes: [node("boot", undefined, { startedAt: T0, routed: false, reachable: false })],
    }));
    expect(outputs.map((o) => statusOf(o, "boot").state)).toEqual([
      "Starting",
      "Unresponsive",
      "Unresponsive",
    ]);
  });
});

describe("two tiers: unroute vs restart", () => {
  it("a small steady lag only unroutes; it is never restarted", () => {
    const sc = new Scenario();
    const outputs = sc.run(600, PROBE, (_i, now) => ({
      peers: [peer("a", headAt(now))],
      nodes: [node("behind5", headAt(now) - 5)],
    }));
    expect(allDecisions(outputs, "unroute")).toEqual(["behind5"]);
    expect(allDecisions(outputs, "restart")).toEqual([]);
  });

  it("a lag of restartLagBlocks or more is restarted after restartAfter", () => {
    const sc = new Scenario();
    const outputs = sc.run(70, PROBE, (_i, now) => ({
      peers: [peer("a", headAt(now))],
      nodes: [node("behind40", headAt(now) - 40)],
    }));
    const restarts = outputs.flatMap((o) => o.decisions.filter((d) => d.kind === "restart"));
    expect(restarts).toEqual([{ kind: "restart", node: "behind40", reason: "lag" }]);
    expect(decisionsOf(outputs[60]!, "restart")).toEqual(["behind40"]); // 2 s + 120 s
  });

  it("a stall (head not climbing while the peers' does) is restarted after stallAfter", () => {
    const sc = new Scenario();
    const outputs = sc.run(80, PROBE, (_i, now) => ({
      peers: [peer("a", headAt(now))],
      nodes: [node("stuck", 1000)],
    }));
    // The reference reaches 1001 at T0 + 12 s; the stall clock runs from the last probe that saw the node level
    // (T0 + 10 s), so the 120 s stall is reached at T0 + 130 s.
    const restartRound = outputs.findIndex((o) => decisionsOf(o, "restart").length > 0);
    expect((restartRound + 1) * PROBE).toBe(130_000);
    expect(outputs[restartRound]!.decisions).toContainEqual({
      kind: "restart",
      node: "stuck",
      reason: "stall",
    });
    expect(statusOf(outputs[restartRound - 1]!, "stuck")).toMatchObject({ state: "Lagging", reason: "lag" });
    expect(statusOf(outputs[restartRound]!, "stuck")).toMatchObject({ state: "Restarting", reason: "stall" });
  });

  it("a wrong chain lasting restartAfter is restarted as diverged", () => {
    const sc = new Scenario();
    const outputs = sc.run(62, PROBE, (_i, now) => ({
      peers: [peer("a", headAt(now))],
      nodes: [node("x", headAt(now), { chainId: 5 })],
    }));
    // Bad from the first probe at T0 + 2 s: restarted at T0 + 122 s, once.
    expect(outputs[60]!.decisions).toContainEqual({ kind: "restart", node: "x", reason: "diverged" });
    expect(allDecisions(outputs, "restart")).toEqual(["x"]);
  });
});

describe("Restarting", () => {
  it("a restart in flight is Restarting and unrouted; the new incarnation is Starting, then Healthy", () => {
    const sc = new Scenario();
    sc.round({ peers: [peer("a", 1000)], nodes: [node("n", 1000)] });
    const during = sc.after(PROBE, {
      peers: [peer("a", 1000)],
      nodes: [node("n", undefined, { restartInFlight: true, reachable: false })],
    });
    expect(statusOf(during, "n")).toMatchObject({ state: "Restarting", routed: false });
    expect(during.decisions).toContainEqual({ kind: "unroute", node: "n" });
    const restartedAt = sc.now + PROBE;
    const after = sc.run(4, PROBE, () => ({
      peers: [peer("a", 1000)],
      nodes: [node("n", 1000, { startedAt: restartedAt, restarts: [{ at: restartedAt, reason: "manual" }] })],
    }));
    expect(after.map((o) => statusOf(o, "n").state)).toEqual(["Starting", "Starting", "Healthy", "Healthy"]);
    expect(allDecisions(after, "route")).toEqual(["n"]);
  });
});
