import { describe, expect, it } from "vitest";
import { EngineInputError, evaluateNetwork } from "../../src/health/engine.js";
import { readMemory } from "../../src/health/engineMemory.js";
import type { NodeObservation } from "../../src/health/types.js";
import { Scenario, T0, allDecisions, decisionsOf, networkParams, node, peer, statusOf } from "./scenario.js";

/** The canonical chain climbs one block per 12 s from block 1000 at T0. */
const headAt = (now: number) => 1000 + Math.floor((now - T0) / 12_000);
const PROBE = 2_000;

describe("the failures other RPC proxies have hit", () => {
  it("a peer on a wrong chain racing millions of blocks ahead does not make healthy nodes look behind", () => {
    const sc = new Scenario();
    // Only one reserved peer, the worst case for quorum: the velocity gate is what holds.
    sc.round({ peers: [peer("full-0", 1000)], nodes: [node("n1", 1000), node("n2", 1000)] });
    const outputs = sc.run(30, PROBE, (_i, now) => ({
      peers: [peer("full-0", 5_000_000 + headAt(now), { chain: "fork" })],
      nodes: [node("n1", headAt(now)), node("n2", headAt(now))],
    }));
    for (const out of outputs) {
      expect(out.reference?.number).toBe(1000);
      expect(out.ignoredReference).toMatchObject({ peers: ["full-0"], reason: "implausible-jump" });
      expect(out.nodes.map((n) => [n.state, n.lagBlocks])).toEqual([
        ["Healthy", 0],
        ["Healthy", 0],
      ]);
    }
    expect(allDecisions(outputs, "unroute")).toEqual([]);
    expect(allDecisions(outputs, "restart")).toEqual([]);
  });

  it("a lone racing peer that keeps racing ends as peers-halted, naming the ignored head: still no restarts", () => {
    const sc = new Scenario();
    sc.round({ peers: [peer("full-0", 1000)], nodes: [node("n1", 1000), node("dead", 1000)] });
    const outputs = sc.run(90, PROBE, (_i, now) => ({
      peers: [peer("full-0", 5_000_000 + headAt(now), { chain: "fork" })],
      nodes: [node("n1", headAt(now)), node("dead", undefined, { reachable: false })],
    }));
    const last = outputs.at(-1)!;
    expect(last.systemic?.cause).toBe("peers-halted");
    expect(last.systemic?.message).toMatch(/head 50010\d\d from full-0 ignored as an implausible jump/);
    expect(allDecisions(outputs, "restart")).toEqual([]);
  });

  it("with three peers the racing one is outvoted and the reference follows the honest two", () => {
    const sc = new Scenario();
    const outputs = sc.run(12, PROBE, (_i, now) => ({
      peers: [
        peer("a", headAt(now)),
        peer("b", headAt(now)),
        peer("evil", 9_000_000 + headAt(now), { chain: "fork" }),
      ],
      nodes: [node("n1", headAt(now))],
    }));
    expect(outputs.at(-1)!.reference).toMatchObject({ number: headAt(sc.now), peers: ["a", "b"] });
    expect(outputs.every((o) => statusOf(o, "n1").state === "Healthy")).toBe(true);
  });

  it("a node that never reported a head is unhealthy with no lag figure, not 'lag 0'", () => {
    const sc = new Scenario();
    const outputs = sc.run(3, PROBE, () => ({ peers: [peer("a", 1000)], nodes: [node("n1", undefined)] }));
    const last = statusOf(outputs.at(-1)!, "n1");
    expect(last).toMatchObject({ state: "Lagging", routed: false, reason: "no-head" });
    expect(last.lagBlocks).toBeUndefined();
    expect(last.head).toBeUndefined();
    expect(allDecisions(outputs, "unroute")).toEqual(["n1"]);
  });

  it("a node at height 0 is unhealthy", () => {
    const sc = new Scenario();
    const outputs = sc.run(2, PROBE, () => ({ peers: [peer("a", 1000)], nodes: [node("n1", 0)] }));
    expect(statusOf(outputs.at(-1)!, "n1")).toMatchObject({
      state: "Lagging",
      reason: "height-zero",
      head: 0,
      lagBlocks: 1000,
    });
  });

  it("a node at height 0 on a chain just started is a block or two behind, not broken: never restarted for it", () => {
    // The end-to-end pool's settings: 200 ms probes, restartAfter 1 s, a pod started long before. Block 1 reaches the
    // node late (a loaded machine); it must not be restarted for a lag of one block.
    const sc = new Scenario(
      networkParams(
        { probeInterval: "200ms", restartAfter: "1s", startupGrace: "1s", maxLagBlocks: 3 },
        "1s",
      ),
    );
    const outputs = sc.run(20, 200, () => ({
      peers: [peer("a", 1, { blockSeconds: 1 }), peer("b", 1, { blockSeconds: 1 })],
      nodes: [node("n1", 0, { blockSeconds: 1, routed: false })],
    }));
    expect(allDecisions(outputs, "restart")).toEqual([]);
    expect(statusOf(outputs.at(-1)!, "n1")).toMatchObject({ head: 0, lagBlocks: 1 });
    expect(statusOf(outputs.at(-1)!, "n1").reason).not.toBe("height-zero");
  });

  it("peers halted: no restarts, even of a node that stopped answering", () => {
    const sc = new Scenario();
    const outputs = sc.run(200, PROBE, () => ({
      peers: [peer("a", 1000), peer("b", 1000)],
      nodes: [node("n1", 1000), node("dead", 1000, { reachable: false, head: undefined })],
    }));
    const last = outputs.at(-1)!;
    expect(last.systemic?.cause).toBe("peers-halted");
    expect(allDecisions(outputs, "restart")).toEqual([]);
    // The network halted at 120 s (10 block times): before that the dead node was unrouted, after that nothing moves.
    const haltedRounds = outputs.filter((o) => o.systemic);
    expect(haltedRounds.length).toBeGreaterThan(100);
    expect(haltedRounds.flatMap((o) => o.decisions)).toEqual([]);
    expect(statusOf(last, "n1")).toMatchObject({ state: "Healthy", routed: true, lagBlocks: 0 });
  });

  it("more than half the pool bad at once while the rest keeps up with the peers: the bad nodes are bad", () => {
    const sc = new Scenario();
    const names = Array.from({ length: 10 }, (_, i) => `n${i}`);
    const nodesAt = (now: number, bad: number) =>
      names.map((name, i) =>
        i < bad ? node(name, undefined, { reachable: false, error: "timeout" }) : node(name, headAt(now)),
      );
    sc.round({ peers: [peer("a", headAt(sc.now))], nodes: nodesAt(sc.now, 0) });
    const outputs = sc.run(10, PROBE, (_i, now) => ({
      peers: [peer("a", headAt(now))],
      nodes: nodesAt(now, 6),
    }));
    expect(outputs.every((o) => o.systemic === undefined)).toBe(true);
    // Out of routing after unhealthyAfter probes, all six at once.
    expect(allDecisions(outputs, "unroute")).toEqual(names.slice(0, 6));
    expect(outputs.at(-1)!.nodes.filter((n) => n.routed)).toHaveLength(4);
  });

  it("the whole pool bad at once while the peers agree: systemic, no restarts and routing kept", () => {
    const sc = new Scenario();
    const names = Array.from({ length: 10 }, (_, i) => `n${i}`);
    const nodesAt = (now: number, bad: number) =>
      names.map((name, i) =>
        i < bad ? node(name, undefined, { reachable: false, error: "timeout" }) : node(name, headAt(now)),
      );
    sc.round({ peers: [peer("a", headAt(sc.now))], nodes: nodesAt(sc.now, 0) });
    const outputs = sc.run(100, PROBE, (_i, now) => ({
      peers: [peer("a", headAt(now))],
      nodes: nodesAt(now, 10),
    }));
    for (const out of outputs) {
      expect(out.systemic).toMatchObject({ cause: "pool-mostly-bad" });
      expect(out.systemic?.message).toContain("10 of 10");
      expect(out.decisions).toEqual([]);
      expect(out.nodes.filter((n) => n.routed)).toHaveLength(10);
    }
    // When the pool recovers the systemic condition ends and nothing was restarted meanwhile.
    const healed = sc.after(PROBE, {
      peers: [peer("a", headAt(sc.now + PROBE))],
      nodes: nodesAt(sc.now + PROBE, 0),
    });
    expect(healed.systemic).toBeUndefined();
    expect(healed.nodes.every((n) => n.state === "Healthy" && n.routed)).toBe(true);
  });

  it("less than half the pool bad: the bad nodes are unrouted and restarted one at a time", () => {
    const sc = new Scenario();
    const names = Array.from({ length: 10 }, (_, i) => `n${i}`);
    const nodesAt = (now: number) =>
      names.map((name, i) => (i < 4 ? node(name, undefined, { reachable: false }) : node(name, headAt(now))));
    const outputs = sc.run(70, PROBE, (_i, now) => ({
      peers: [peer("a", headAt(now))],
      nodes: nodesAt(now),
    }));
    expect(outputs.some((o) => o.systemic)).toBe(false);
    expect(decisionsOf(outputs[1]!, "unroute")).toEqual(["n0", "n1", "n2", "n3"]);
    // Unresponsive from the first round at T0+2s; restartAfter 120 s later, one restart (budget 1).
    expect(allDecisions(outputs, "restart")).toEqual(["n0"]);
    expect(decisionsOf(outputs[60]!, "restart")).toEqual(["n0"]);
  });

  it("a single bad node in a pool of one is handled, not treated as systemic", () => {
    const sc = new Scenario();
    const outputs = sc.run(70, PROBE, (_i, now) => ({
      peers: [peer("a", headAt(now))],
      nodes: [node("only", undefined, { reachable: false })],
    }));
    expect(outputs.some((o) => o.systemic)).toBe(false);
    expect(allDecisions(outputs, "restart")).toEqual(["only"]);
  });
});

describe("engine contract", () => {
  it("is deterministic and never mutates its previous state", () => {
    const network = networkParams();
    const first = evaluateNetwork({
      now: T0,
      network,
      peers: [peer("a", 1000)],
      nodes: [node("n1", 1000), node("n2", 990)],
    });
    const frozen = JSON.stringify(first.state);
    const input = {
      now: T0 + PROBE,
      network,
      peers: [peer("a", 1000)],
      nodes: [node("n1", 1000), node("n2", 990)],
      previous: first.state,
    };
    const a = evaluateNetwork(input);
    const b = evaluateNetwork(input);
    expect(a.nodes).toEqual(b.nodes);
    expect(a.decisions).toEqual(b.decisions);
    expect(JSON.stringify(first.state)).toBe(frozen);
  });

  it("on a cold start trusts the fleet's routing: routed nodes start Healthy, others Starting", () => {
    const out = evaluateNetwork({
      now: T0,
      network: networkParams(),
      peers: [peer("a", 1000)],
      nodes: [node("routed", 1000), node("new", 1000, { routed: false, startedAt: T0 - 1_000 })],
    });
    expect(out.nodes.map((n) => [n.name, n.state, n.routed])).toEqual([
      ["routed", "Healthy", true],
      ["new", "Starting", false],
    ]);
    expect(out.decisions).toEqual([
      { kind: "transition", node: "routed", from: undefined, to: "Healthy", message: "in sync" },
      {
        kind: "transition",
        node: "new",
        from: undefined,
        to: "Starting",
        message: "starting, 1/3 good probes: in sync",
      },
    ]);
  });

  it("route and unroute only on change against the node's current routing", () => {
    const sc = new Scenario();
    sc.round({ peers: [peer("a", 1000)], nodes: [node("n1", 1000)] });
    // The fleet lost the routing flag (e.g. a pod re-created): the engine routes it again, once.
    sc.routed.set("n1", false);
    const out = sc.after(PROBE, { peers: [peer("a", 1000)], nodes: [node("n1", 1000)] });
    expect(out.decisions).toEqual([{ kind: "route", node: "n1" }]);
    const again = sc.after(PROBE, { peers: [peer("a", 1000)], nodes: [node("n1", 1000)] });
    expect(again.decisions).toEqual([]);
  });

  it("follows nodes by name when the fleet lists them in another order", () => {
    const sc = new Scenario();
    sc.round({ peers: [peer("a", 1000)], nodes: [node("n1", 1000), node("n2", 990)] });
    sc.after(PROBE, { peers: [peer("a", 1000)], nodes: [node("n1", 1000), node("n2", 990)] });
    const out = sc.after(PROBE, { peers: [peer("a", 1000)], nodes: [node("n2", 990), node("n1", 1000)] });
    expect(out.nodes.map((n) => [n.name, n.state])).toEqual([
      ["n2", "Lagging"],
      ["n1", "Healthy"],
    ]);
    expect(out.decisions).toEqual([]);
  });

  it("forgets nodes that are gone", () => {
    const sc = new Scenario();
    sc.round({ peers: [peer("a", 1000)], nodes: [node("n1", 1000), node("n2", 1000)] });
    const out = sc.after(PROBE, { peers: [peer("a", 1000)], nodes: [node("n1", 1000)] });
    expect(readMemory(out.state).names).toEqual(["n1"]);
  });

  it("refuses bad input with a clear error", () => {
    const network = networkParams();
    const twice: NodeObservation[] = [node("n1", 1), node("n1", 2)];
    expect(() => evaluateNetwork({ now: T0, network, peers: [], nodes: twice })).toThrow(
      new EngineInputError('duplicate node name "n1"'),
    );
    expect(() => evaluateNetwork({ now: Number.NaN, network, peers: [], nodes: [] })).toThrow(
      EngineInputError,
    );
  });

  it("ignores a previous state it does not recognise", () => {
    const out = evaluateNetwork({
      now: T0,
      network: networkParams(),
      peers: [peer("a", 1000)],
      nodes: [node("n1", 1000)],
      previous: { something: "else" },
    });
    expect(statusOf(out, "n1").state).toBe("Healthy");
  });
});
