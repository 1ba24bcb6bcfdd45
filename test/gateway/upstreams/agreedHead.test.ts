import { describe, expect, it } from "vitest";
import { agreeOnHead } from "../../../src/gateway/upstreams/agreedHead.js";
import { peer, recentHashes } from "../../health/scenario.js";

/** Routed nodes as the gateway's followers see them: head and recent hashes (built like reserved peers). */
const at = peer;

describe("the head the gateway may serve", () => {
  it("is the highest block two routed nodes have by hash", () => {
    const agreement = agreeOnHead([at("a", 101), at("b", 100), at("c", 100)], []);
    expect(agreement.head?.number).toBe(100);
    expect(agreement.supporters).toEqual(["a", "b", "c"]);
    expect(agreement.dissenters.size).toBe(0);
  });

  it("moves up once a second node has the block", () => {
    expect(agreeOnHead([at("a", 101), at("b", 101), at("c", 100)], []).head?.number).toBe(101);
  });

  it("with one routed node, is its head (nothing to compare with)", () => {
    expect(agreeOnHead([at("a", 7)], []).head?.number).toBe(7);
  });

  it("outvotes a node announcing a block of its own, and names it a dissenter once the others agree on that height", () => {
    const forked = { chain: "fork", recentHashes: recentHashes(101) };
    const forkedAhead = agreeOnHead([at("a", 101, forked), at("b", 100), at("c", 100)], []);
    // Its block 101 is nobody else's; its history below agrees, so it still serves block 100.
    expect(forkedAhead.head?.number).toBe(100);
    expect(forkedAhead.dissenters.size).toBe(0);
    const overtaken = agreeOnHead([at("a", 101, forked), at("b", 101), at("c", 101)], []);
    expect(overtaken.head).toMatchObject({ number: 101, hash: "0xmain-101" });
    expect([...overtaken.dissenters]).toEqual(["a"]);
  });

  it("names a node whose head below the agreed block is not on the agreed chain", () => {
    const agreement = agreeOnHead([at("a", 99, { chain: "fork" }), at("b", 101), at("c", 101)], []);
    expect(agreement.head?.number).toBe(101);
    expect([...agreement.dissenters]).toEqual(["a"]);
  });

  it("two nodes on different blocks agree on their common history only", () => {
    const a = at("a", 101, { chain: "x", recentHashes: new Map([[100, "0xmain-100"]]) });
    const b = at("b", 101, { chain: "y", recentHashes: new Map([[100, "0xmain-100"]]) });
    expect(agreeOnHead([a, b], []).head).toBeUndefined();
    expect(agreeOnHead([a, b, at("c", 100)], []).head?.number).toBe(100);
  });

  it("nothing to agree on without voters", () => {
    expect(agreeOnHead([], []).head).toBeUndefined();
  });
});

describe("the head the gateway may serve, with reserved peers", () => {
  it("a block the peers have is served from one node, without waiting for a second", () => {
    const agreement = agreeOnHead([at("a", 101), at("stalled", 90)], [at("full-0", 101), at("full-1", 101)]);
    expect(agreement.head?.number).toBe(101);
    expect(agreement.dissenters.size).toBe(0);
  });

  it("a node's block the peers have another hash for is never served, and the node is a dissenter at once", () => {
    const forked = { chain: "fork", recentHashes: recentHashes(101) };
    const agreement = agreeOnHead([at("a", 101, forked), at("b", 100)], [at("full-0", 101)]);
    expect(agreement.head?.number).toBe(100);
    expect([...agreement.dissenters]).toEqual(["a"]);
  });

  it("when the peers are behind, the routed nodes' quorum decides", () => {
    const peers = [at("full-0", 100), at("full-1", 100)];
    expect(agreeOnHead([at("a", 101), at("b", 100)], peers).head?.number).toBe(100);
    expect(agreeOnHead([at("a", 101), at("b", 101)], peers).head?.number).toBe(101);
  });

  it("peers split on a height leave it to the routed nodes; a quorum of peers outvotes one on another chain", () => {
    const split = [at("full-0", 101), at("evil", 101, { chain: "x" })];
    expect(agreeOnHead([at("a", 101), at("b", 100)], split).head?.number).toBe(100);
    expect(agreeOnHead([at("a", 101), at("b", 101)], split).head?.number).toBe(101);
    const three = [at("full-0", 101), at("full-1", 101), at("evil", 101, { chain: "x" })];
    expect(agreeOnHead([at("a", 101), at("b", 100)], three).head?.number).toBe(101);
  });
});
