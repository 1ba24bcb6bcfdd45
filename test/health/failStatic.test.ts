import { describe, expect, it } from "vitest";
import { Scenario, T0, allDecisions, node, peer, statusOf } from "./scenario.js";

const PROBE = 2_000;
const headAt = (now: number) => 1000 + Math.floor((now - T0) / 12_000);

describe("fail static", () => {
  it("no peer reachable: systemic, no restarts, no routing change, state kept", () => {
    const sc = new Scenario();
    sc.round({ peers: [peer("a", 1000), peer("b", 1000)], nodes: [node("n1", 1000), node("n2", 1000)] });
    const outputs = sc.run(100, PROBE, () => ({
      peers: [peer("a", 1000, { reachable: false }), peer("b", 1000, { reachable: false })],
      nodes: [node("n1", undefined, { reachable: false }), node("n2", 1000)],
    }));
    for (const out of outputs) {
      expect(out.systemic?.cause).toBe("no-peer-reachable");
      expect(out.decisions).toEqual([]);
      expect(out.nodes.map((n) => [n.state, n.routed])).toEqual([
        ["Healthy", true],
        ["Healthy", true],
      ]);
    }
    expect(statusOf(outputs[0]!, "n1").message).toContain("systemic failure");
  });

  it("a pool's first rounds, before any peer answered or failed, hold as pending, not as a failure", () => {
    const sc = new Scenario();
    const first = sc.round({
      peers: [
        peer("a", 1000, { reachable: false, pending: true }),
        peer("b", 1000, { reachable: false, pending: true }),
      ],
      nodes: [node("n1", 1000)],
    });
    expect(first.systemic).toMatchObject({ cause: "no-peer-reachable", pending: true });
    expect(first.systemic?.message).toMatch(/waiting for the first answer of the reserved peers \(a, b\)/);
    expect(first.decisions.filter((d) => d.kind === "restart")).toEqual([]);
    // One peer that failed makes it a real outage.
    const failed = sc.round({
      peers: [peer("a", 1000, { reachable: false, pending: true }), peer("b", 1000, { reachable: false })],
      nodes: [node("n1", 1000)],
    });
    expect(failed.systemic?.cause).toBe("no-peer-reachable");
    expect(failed.systemic?.pending).toBeUndefined();
  });

  it("a pool edited while it runs (its followers new, its state kept): their first contact holds as pending too", () => {
    const sc = new Scenario();
    sc.round({ peers: [peer("a", 1000), peer("b", 1000)], nodes: [node("n1", 1000)] });
    const edited = sc.round({
      peers: [
        peer("a", 1000, { reachable: false, pending: true }),
        peer("b", 1000, { reachable: false, pending: true }),
      ],
      nodes: [node("n1", 1000)],
    });
    expect(edited.systemic).toMatchObject({ cause: "no-peer-reachable", pending: true });
    expect(edited.decisions).toEqual([]);
    expect(edited.nodes.map((n) => [n.state, n.routed])).toEqual([["Healthy", true]]);
    const answered = sc.round({ peers: [peer("a", 1000), peer("b", 1000)], nodes: [node("n1", 1000)] });
    expect(answered.systemic).toBeUndefined();
  });

  it("peers on the wrong chain only: treated as no peer reachable", () => {
    const sc = new Scenario();
    const out = sc.round({ peers: [peer("a", 1000, { chainId: 5 })], nodes: [node("n1", 1000)] });
    expect(out.systemic?.cause).toBe("no-peer-reachable");
    expect(out.reference).toBeUndefined();
  });

  it("peers disagreeing for longer than two block times: systemic peers-disagree", () => {
    const sc = new Scenario();
    sc.round({ peers: [peer("a", 1000), peer("b", 1000)], nodes: [node("n1", 1000)] });
    const outputs = sc.run(20, PROBE, (_i, now) => ({
      peers: [peer("a", headAt(now), { chain: "x" }), peer("b", headAt(now), { chain: "y" })],
      nodes: [node("n1", undefined, { reachable: false })],
    }));
    expect(outputs[0]!.systemic).toBeUndefined();
    expect(outputs.at(-1)!.systemic?.cause).toBe("peers-disagree");
    expect(allDecisions(outputs, "restart")).toEqual([]);
  });

  it("when the systemic condition ends, timers start over: no restart storm", () => {
    const sc = new Scenario();
    const peersUp = (now: number) => [peer("a", headAt(now))];
    sc.round({ peers: peersUp(sc.now), nodes: [node("n1", 1000), node("n2", 1000), node("n3", 1000)] });
    // All three stop answering for 5 minutes: more than half at once.
    const down = sc.run(150, PROBE, (_i, now) => ({
      peers: peersUp(now),
      nodes: ["n1", "n2", "n3"].map((n) => node(n, undefined, { reachable: false })),
    }));
    expect(down.every((o) => o.systemic?.cause === "pool-mostly-bad")).toBe(true);
    // Two come back; n3 stays down and is now an individual failure, restarted restartAfter later.
    const after = sc.run(70, PROBE, (_i, now) => ({
      peers: peersUp(now),
      nodes: [node("n1", headAt(now)), node("n2", headAt(now)), node("n3", undefined, { reachable: false })],
    }));
    expect(after[0]!.systemic).toBeUndefined();
    expect(after[0]!.decisions).toContainEqual({ kind: "unroute", node: "n3" });
    expect(allDecisions(after.slice(0, 59), "restart")).toEqual([]);
    expect(allDecisions(after, "restart")).toEqual(["n3"]);
  });
});
