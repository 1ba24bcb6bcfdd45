import { describe, expect, it } from "vitest";
import type { NodeObservation, PeerObservation } from "../../src/health/types.js";
import type { BlockRef } from "../../src/chain/blockRef.js";
import { CHAIN_ID, Scenario, T0, allDecisions, hashOf, networkParams, recentHashes } from "./scenario.js";

/**
 * A 250 ms chain: four blocks a second, block timestamps in whole seconds (the header's resolution). Nodes are up to
 * a block behind the peers when probed, as on a real fast chain.
 */
const BLOCK_MS = 250;
const GENESIS_S = 1_600_000_000;
const heightAt = (now: number) => Math.floor((now - T0) / BLOCK_MS) + 1000;
const blockAt = (n: number): BlockRef => ({
  number: n,
  hash: hashOf(n),
  timestamp: GENESIS_S + Math.floor(((n - 1000) * BLOCK_MS) / 1000),
});
const peerAt = (name: string, n: number): PeerObservation => ({
  name,
  reachable: true,
  chainId: CHAIN_ID,
  head: blockAt(n),
  recentHashes: recentHashes(n),
});
const nodeAt = (name: string, n: number): NodeObservation => ({
  name,
  startedAt: T0 - 3_600_000,
  reachable: true,
  chainId: CHAIN_ID,
  head: blockAt(n),
  syncing: false,
  restarts: [],
  routed: true,
});

describe("a fast chain (250 ms blocks) with the default thresholds", () => {
  it("derives maxLagSeconds no finer than the one-second resolution of block timestamps", () => {
    expect(networkParams({}, "250ms").health.maxLagSeconds).toBe(1_000);
    expect(networkParams({ maxLagBlocks: 8 }, "250ms").health.maxLagSeconds).toBe(2_000);
    expect(networkParams({}, "12s").health.maxLagSeconds).toBe(36_000);
  });

  it("nodes a block behind at the probe never flap out of routing, and the pool is never systemic", () => {
    const sc = new Scenario(networkParams({}, "250ms"));
    // Nine minutes of 2 s probes; each node is 0 or 1 block behind the peers, turn by turn.
    const outputs = sc.run(270, 2_000, (i, now) => {
      const head = heightAt(now);
      return {
        peers: [peerAt("full-0", head), peerAt("full-1", head)],
        nodes: [nodeAt("n1", head - (i % 2)), nodeAt("n2", head - ((i + 1) % 2)), nodeAt("n3", head - 1)],
      };
    });
    expect(outputs.filter((o) => o.systemic).length).toBe(0);
    expect(allDecisions(outputs, "unroute")).toEqual([]);
  });

  it("a node seconds of timestamps behind still leaves routing on maxLagSeconds", () => {
    const sc = new Scenario(networkParams({ maxLagBlocks: 100, maxLagSeconds: "1s" }, "250ms"));
    const outputs = sc.run(4, 2_000, (_i, now) => {
      const head = heightAt(now);
      return { peers: [peerAt("full-0", head)], nodes: [nodeAt("ok", head), nodeAt("behind", head - 12)] };
    });
    expect(allDecisions(outputs, "unroute")).toEqual(["behind"]);
  });
});
