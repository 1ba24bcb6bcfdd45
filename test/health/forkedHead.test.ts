import { describe, expect, it } from "vitest";
import { Scenario, T0, decisionsOf, node, peer, recentHashes, statusOf } from "./scenario.js";

const PROBE = 2_000;
const headAt = (now: number) => 1000 + Math.floor((now - T0) / 12_000);

describe("a node announcing another hash for a height the peers know", () => {
  it("leaves routing in the round it is seen, without waiting for unhealthyAfter probes", () => {
    const sc = new Scenario();
    sc.round({ peers: [peer("a", 1000), peer("b", 1000)], nodes: [node("n1", 1000), node("n2", 1000)] });
    // n1's head is the peers' height with a foreign hash (its history below is still the main chain's).
    const out = sc.after(PROBE, {
      peers: [peer("a", 1001), peer("b", 1001)],
      nodes: [node("n1", 1001, { chain: "fork", check: undefined }), node("n2", 1001)],
    });
    expect(decisionsOf(out, "unroute")).toEqual(["n1"]);
    expect(statusOf(out, "n1")).toMatchObject({ state: "Diverged", reason: "hash-mismatch", routed: false });
    expect(statusOf(out, "n1").message).toContain("block 1001");
    expect(statusOf(out, "n2")).toMatchObject({ state: "Healthy", routed: true });
  });

  it("a head below the reference is checked against the peers' recent hashes too", () => {
    const sc = new Scenario();
    sc.round({ peers: [peer("a", 1000), peer("b", 1000)], nodes: [node("n1", 1000), node("n2", 1000)] });
    const out = sc.after(PROBE, {
      peers: [peer("a", 1002, { recentHashes: recentHashes(1002) }), peer("b", 1002)],
      nodes: [node("n1", 1001, { chain: "fork" }), node("n2", 1002)],
    });
    expect(statusOf(out, "n1")).toMatchObject({ state: "Diverged", routed: false });
  });

  it("a node ahead of the peers is not judged on a block they do not have yet", () => {
    const sc = new Scenario();
    sc.round({ peers: [peer("a", 1000), peer("b", 1000)], nodes: [node("n1", 1000)] });
    const out = sc.after(PROBE, {
      peers: [peer("a", headAt(T0)), peer("b", headAt(T0))],
      nodes: [node("n1", 1001, { chain: "fork" })],
    });
    expect(statusOf(out, "n1")).toMatchObject({ state: "Healthy", routed: true });
  });
});
