import { describe, expect, it } from "vitest";
import { agreedHeads, eligiblePeers } from "../../src/health/referenceHead.js";
import { trackReference } from "../../src/health/referenceTracker.js";
import type { PeerObservation } from "../../src/health/types.js";
import { isPlausibleAdvance } from "../../src/health/velocityGate.js";
import { CHAIN_ID, T0, networkParams, peer } from "./scenario.js";

function bestAgreed(peers: PeerObservation[], quorum = 2) {
  const agreed = agreedHeads(eligiblePeers(peers, CHAIN_ID), quorum)[0];
  return agreed && { number: agreed.head.number, hash: agreed.head.hash, peers: agreed.peers };
}

describe("reference head by quorum of reserved peers", () => {
  it.each<[string, PeerObservation[], { number: number; peers: string[] } | undefined]>([
    ["one peer: its head", [peer("a", 100)], { number: 100, peers: ["a"] }],
    [
      "three agree, the highest agreed head wins",
      [peer("a", 100), peer("b", 100), peer("c", 100)],
      { number: 100, peers: ["a", "b", "c"] },
    ],
    [
      "one peer a block ahead: the head two agree on by hash (recent hashes) wins",
      [peer("a", 101), peer("b", 100)],
      { number: 100, peers: ["a", "b"] },
    ],
    [
      "one peer on another fork racing millions of blocks ahead is outvoted",
      [peer("a", 100), peer("b", 100), peer("evil", 5_000_000, { chain: "fork" })],
      { number: 100, peers: ["a", "b"] },
    ],
    [
      "a peer on the wrong chain id is ignored even when it is highest",
      [peer("a", 100), peer("b", 100), peer("goerli", 200, { chainId: 5 })],
      { number: 100, peers: ["a", "b"] },
    ],
    [
      "a peer whose chain id is not verified yet is ignored",
      [peer("a", 100), peer("new", 300, { chainId: undefined })],
      { number: 100, peers: ["a"] },
    ],
    [
      "unreachable peers do not count: one reachable peer is enough",
      [peer("a", 100, { reachable: false }), peer("b", 99)],
      { number: 99, peers: ["b"] },
    ],
    [
      "two peers on different forks agree on nothing",
      [peer("a", 100), peer("b", 100, { chain: "fork" })],
      undefined,
    ],
    [
      "agreement needs the same hash, not the same number",
      [
        peer("a", 100, { recentHashes: new Map() }),
        peer("b", 101, { recentHashes: new Map([[100, "0xother"]]) }),
      ],
      undefined,
    ],
  ])("%s", (_title, peers, expected) => {
    const got = bestAgreed(peers);
    if (expected === undefined) expect(got).toBeUndefined();
    else expect(got).toMatchObject(expected);
  });

  it("a quorum of 3 of 3 is needed when configured", () => {
    expect(bestAgreed([peer("a", 101), peer("b", 101), peer("c", 100)], 3)).toMatchObject({ number: 100 });
  });
});

describe("velocity gate", () => {
  const gate = { blockTimeMs: 12_000, slackBlocks: 8 };
  it.each<[string, number, number, boolean]>([
    ["the next block right away", 0, 101, true],
    ["the slack right away", 0, 108, true],
    ["beyond the slack right away", 0, 109, false],
    ["two blocks per interval after a minute (10 + 8)", 60_000, 118, true],
    ["more than that after a minute", 60_000, 119, false],
    ["millions of blocks after an hour", 3_600_000, 5_000_000, false],
    ["going down is never gated", 0, 50, true],
  ])("%s", (_title, elapsed, candidate, plausible) => {
    expect(isPlausibleAdvance({ number: 100, seenAt: T0 }, candidate, T0 + elapsed, gate)).toBe(plausible);
  });

  it("without a previous reference any head is adopted", () => {
    expect(isPlausibleAdvance(undefined, 5_000_000, T0, gate)).toBe(true);
  });
});

describe("reference tracking", () => {
  const network = networkParams({ peerQuorum: 2 });

  it("keeps the previous reference when the only higher quorum head jumps implausibly, and names it", () => {
    const first = trackReference([peer("a", 100)], network, {}, T0);
    expect(first.reference).toMatchObject({ number: 100, seenAt: T0 });
    const racing = trackReference([peer("a", 9_000_000, { chain: "fork" })], network, first, T0 + 2_000);
    expect(racing.reference?.number).toBe(100);
    expect(racing.ignored?.head.number).toBe(9_000_000);
    expect(racing.problem).toBeUndefined();
  });

  it("adopts a lower agreed head when the highest one is implausible", () => {
    const first = trackReference([peer("a", 100)], network, {}, T0);
    // Quorum 1 of a single peer would race; with two the racing head has no quorum at all, so use quorum 1.
    const loose = networkParams({ peerQuorum: 1 });
    const next = trackReference(
      [peer("evil", 9_000_000, { chain: "fork" }), peer("a", 101)],
      loose,
      first,
      T0 + 12_000,
    );
    expect(next.reference?.number).toBe(101);
    expect(next.ignored?.peers).toEqual(["evil"]);
  });

  it("tolerates a brief disagreement, then reports peers-disagree", () => {
    const first = trackReference([peer("a", 100), peer("b", 100)], network, {}, T0);
    const forked = [peer("a", 101, { chain: "x" }), peer("b", 101, { chain: "y" })];
    const brief = trackReference(forked, network, first, T0 + 12_000);
    expect(brief.problem).toBeUndefined();
    expect(brief.reference?.number).toBe(100);
    const long = trackReference(forked, network, brief, T0 + 60_000);
    expect(long.problem?.cause).toBe("peers-disagree");
  });

  it("reports no-peer-reachable, naming unreachable and wrong-chain peers", () => {
    const round = trackReference(
      [peer("a", 100, { reachable: false }), peer("b", 100, { chainId: 5 })],
      network,
      {},
      T0,
    );
    expect(round.problem?.cause).toBe("no-peer-reachable");
    expect(round.problem?.message).toContain("unreachable: a");
    expect(round.problem?.message).toContain("b (chain id 5)");
  });

  it("reports peers-halted once the reference has not advanced for peerHaltAfter (10 block times)", () => {
    let history = trackReference([peer("a", 100), peer("b", 100)], network, {}, T0);
    history = trackReference([peer("a", 100), peer("b", 100)], network, history, T0 + 119_000);
    expect(history.problem).toBeUndefined();
    history = trackReference([peer("a", 100), peer("b", 100)], network, history, T0 + 120_000);
    expect(history.problem?.cause).toBe("peers-halted");
  });

  it("uses the peers' own head times on first sight, so a halt is seen right after a controller restart", () => {
    const stale = { headSeenAt: T0 - 600_000 };
    const round = trackReference([peer("a", 100, stale), peer("b", 100, stale)], network, {}, T0);
    expect(round.problem?.cause).toBe("peers-halted");
  });
});
