import { describe, expect, it } from "vitest";
import type { PeerObservation } from "../../src/health/types.js";
import { Scenario, T0, allDecisions, networkParams, node, peer, recentHashes, statusOf } from "./scenario.js";

/** A fast chain: one block a second from block 500 at T0, probed every second. */
const BLOCK_MS = 1_000;
const headAt = (now: number) => 500 + Math.floor((now - T0) / BLOCK_MS);
const network = networkParams({ probeInterval: "1s", maxLagBlocks: 3, stallAfter: "20s" }, "1s");
const fullPeer = (name: string, head: number, options: Partial<PeerObservation> & { chain?: string } = {}) =>
  peer(name, head, { blockSeconds: 1, recentHashes: recentHashes(head, options.chain, 256), ...options });
const lightNode = (name: string, head: number) => node(name, head, { blockSeconds: 1 });

describe("a reserved peer that is killed and comes back replaying its chain", () => {
  it("never pulls the reference backwards, never blinds the controller, and a stalled node is still seen Lagging", () => {
    const sc = new Scenario(network);
    const stalledAt = headAt(T0);
    sc.round({
      peers: [fullPeer("full-0", headAt(T0)), fullPeer("full-1", headAt(T0))],
      nodes: [lightNode("n1", headAt(T0)), lightNode("n2", headAt(T0)), lightNode("stuck", stalledAt)],
    });
    // full-0 is down for 20 s, then a fresh node replays from a low height, 40 blocks a second, until it is back at
    // the head; the light node "stuck" stopped climbing at the start.
    let replayed = headAt(T0) - 150;
    const outputs = sc.run(60, BLOCK_MS, (i, now) => {
      const head = headAt(now);
      const down = i < 20;
      if (!down) replayed = Math.min(head, replayed + 40);
      return {
        peers: [
          down ? fullPeer("full-0", head, { reachable: false }) : fullPeer("full-0", replayed),
          fullPeer("full-1", head),
        ],
        nodes: [lightNode("n1", head), lightNode("n2", head), lightNode("stuck", stalledAt)],
      };
    });
    const references = outputs.map((o) => o.reference!.number);
    for (let i = 1; i < references.length; i++)
      expect(references[i]).toBeGreaterThanOrEqual(references[i - 1]!);
    for (const out of outputs) {
      expect(out.systemic).toBeUndefined();
      expect(out.ignoredReference).toBeUndefined();
      expect(out.reference!.number).toBeGreaterThanOrEqual(headAt(sc.now) - 60);
    }
    expect(outputs.at(-1)!.reference!.number).toBe(headAt(sc.now));
    // "stuck" left routing within a few probes of falling behind, and stayed out.
    const unroutedAt = outputs.findIndex((o) =>
      o.decisions.some((d) => d.kind === "unroute" && d.node === "stuck"),
    );
    expect(unroutedAt).toBeGreaterThanOrEqual(0);
    expect(unroutedAt).toBeLessThan(8);
    for (const out of outputs.slice(unroutedAt)) expect(statusOf(out, "stuck").routed).toBe(false);
    expect(statusOf(outputs.at(-1)!, "stuck").state).toBe("Lagging");
    expect(statusOf(outputs.at(-1)!, "stuck").lagBlocks).toBeGreaterThan(50);
    expect(allDecisions(outputs, "unroute")).toEqual(["stuck"]);
  });

  it("a climb every healthy peer agrees on by hash is adopted, however far it is", () => {
    const sc = new Scenario(network);
    sc.round({ peers: [fullPeer("a", 500), fullPeer("b", 500)], nodes: [lightNode("n1", 500)] });
    // Both peers were cut off together (the controller's link to them) and come back 200 blocks on, agreeing.
    const out = sc.after(5_000, {
      peers: [fullPeer("a", 700), fullPeer("b", 700)],
      nodes: [lightNode("n1", 700)],
    });
    expect(out.reference).toMatchObject({ number: 700, peers: ["a", "b"] });
    expect(out.ignoredReference).toBeUndefined();
    expect(statusOf(out, "n1").lagBlocks).toBe(0);
  });

  it("all peers going down together (a reorg to a shorter chain) still moves the reference down", () => {
    const sc = new Scenario(network);
    sc.round({ peers: [fullPeer("a", 500), fullPeer("b", 500)], nodes: [lightNode("n1", 500)] });
    const out = sc.after(1_000, {
      peers: [fullPeer("a", 499, { chain: "reorg" }), fullPeer("b", 499, { chain: "reorg" })],
      nodes: [lightNode("n1", 499)],
    });
    expect(out.reference).toMatchObject({ number: 499, hash: "0xreorg-499" });
  });
});

describe("both reserved peers killed, then healed: they come back replaying the same chain from low heights", () => {
  /** Both peers down 30 s; back at 27 and 73, replaying 60 blocks a second until they reach the chain's head. */
  function doubleHeal() {
    const sc = new Scenario(network);
    const start = headAt(T0);
    const peers = (now: number) => [fullPeer("full-0", headAt(now)), fullPeer("full-1", headAt(now))];
    const nodes = (now: number) => [lightNode("n1", headAt(now)), lightNode("n2", headAt(now))];
    sc.round({ peers: peers(T0), nodes: nodes(T0) });
    sc.run(30, BLOCK_MS, (_i, now) => ({
      peers: peers(now).map((p) => ({ ...p, reachable: false })),
      nodes: nodes(now),
    }));
    const replayed = { "full-0": 27, "full-1": 73 };
    const outputs = sc.run(30, BLOCK_MS, (_i, now) => {
      const back = (["full-0", "full-1"] as const).map((name) => {
        replayed[name] = Math.min(headAt(now), replayed[name] + 60);
        // A climbing head is a head first seen now.
        return fullPeer(name, replayed[name], { headSeenAt: now });
      });
      return { peers: back, nodes: nodes(now) };
    });
    return { start, outputs, end: headAt(sc.now) };
  }

  it("the reference never falls below what it was while they replay, and follows them once they are back", () => {
    const { start, outputs, end } = doubleHeal();
    for (const out of outputs) expect(out.reference!.number).toBeGreaterThanOrEqual(start);
    expect(outputs.at(-1)!.reference!.number).toBe(end);
  });

  it("replaying peers are recovering, not halted: no peers-halted while they climb", () => {
    const { outputs } = doubleHeal();
    for (const out of outputs) expect(out.systemic?.cause).not.toBe("peers-halted");
    expect(outputs.at(-1)!.systemic).toBeUndefined();
  });

  it("a replaying peer that stops climbing below the reference is halted after all", () => {
    const sc = new Scenario(network);
    sc.round({ peers: [fullPeer("a", 500), fullPeer("b", 500)], nodes: [lightNode("n1", 500)] });
    // Both come back low and stay there, their heads first seen on their return.
    const seenAt = sc.now + 1_000;
    const outputs = sc.run(20, BLOCK_MS, () => ({
      peers: [fullPeer("a", 40, { headSeenAt: seenAt }), fullPeer("b", 40, { headSeenAt: seenAt })],
      nodes: [lightNode("n1", 500)],
    }));
    expect(outputs.every((o) => o.reference!.number === 500)).toBe(true);
    expect(outputs.at(-1)!.systemic?.cause).toBe("peers-halted");
  });
});

describe("a reference that lagged behind for reasons of the controller's own", () => {
  it("follows the live peer once the other is killed, and holds through its replay, with no jump refused", () => {
    const sc = new Scenario(network);
    sc.round({ peers: [fullPeer("full-0", 500), fullPeer("full-1", 500)], nodes: [lightNode("n1", 500)] });
    // A burst: the chain runs six blocks a second, the peers a block apart and each knowing only its own head's hash
    // (headers skipped), so they agree on nothing and the reference holds at 500 while both climb steadily.
    let head = 500;
    const lone = (name: string, n: number, options: Partial<PeerObservation> = {}) =>
      fullPeer(name, n, { recentHashes: new Map(), ...options });
    sc.run(6, BLOCK_MS, () => {
      head += 6;
      return { peers: [lone("full-0", head - 1), lone("full-1", head)], nodes: [lightNode("n1", head)] };
    });
    expect(sc.outputs.at(-1)!.reference!.number).toBe(500);
    // full-0 is killed; full-1 goes on at the block rate, then full-0 comes back replaying from a low height.
    let replayed = 100;
    const outputs = sc.run(30, BLOCK_MS, (i) => {
      head += 1;
      const down = i < 10;
      if (!down) replayed = Math.min(head, replayed + 100);
      return {
        peers: [
          down ? lone("full-0", head, { reachable: false }) : lone("full-0", replayed),
          lone("full-1", head),
        ],
        nodes: [lightNode("n1", head)],
      };
    });
    const references = sc.outputs.map((o) => o.reference!.number);
    for (let i = 1; i < references.length; i++)
      expect(references[i]).toBeGreaterThanOrEqual(references[i - 1]!);
    for (const out of outputs) {
      expect(out.ignoredReference).toBeUndefined();
      expect(out.systemic).toBeUndefined();
    }
    expect(outputs.map((o) => o.reference!.number)).toEqual(outputs.map((_, i) => 536 + i + 1));
    expect(statusOf(outputs.at(-1)!, "n1").lagBlocks).toBe(0);
  });

  it("a peer that jumped far ahead is still refused when it is left alone: its own climb is no anchor for the jump", () => {
    const sc = new Scenario(network);
    sc.round({ peers: [fullPeer("a", 500), fullPeer("b", 500)], nodes: [lightNode("n1", 500)] });
    // b leaps a thousand blocks onto a chain of its own while a goes on; then a goes down and b is alone.
    sc.after(BLOCK_MS, {
      peers: [fullPeer("a", 501), fullPeer("b", 1_500, { chain: "fake" })],
      nodes: [lightNode("n1", 501)],
    });
    const outputs = sc.run(3, BLOCK_MS, (i) => ({
      peers: [fullPeer("a", 502 + i, { reachable: false }), fullPeer("b", 1_501 + i, { chain: "fake" })],
      nodes: [lightNode("n1", 502 + i)],
    }));
    for (const out of outputs) {
      expect(out.reference!.number).toBe(500);
      expect(out.ignoredReference).toMatchObject({ peers: ["b"], reason: "implausible-jump" });
    }
  });
});
