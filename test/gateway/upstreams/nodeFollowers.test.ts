import { describe, expect, it } from "vitest";
import type { PeerConfig } from "../../../src/config/sections/network.js";
import { NodeFollowers } from "../../../src/gateway/upstreams/nodeFollowers.js";
import type { PeerFollower } from "../../../src/probe/peerFollower.js";

/** Followers that only record what is done to them. */
function followers() {
  const made: Array<{ node: PeerConfig; started: number; stopped: number; polls: number }> = [];
  const registry = new NodeFollowers((node) => {
    const record = { node, started: 0, stopped: 0, polls: 0 };
    made.push(record);
    return {
      start: () => void record.started++,
      stop: () => void record.stopped++,
      pollIfSilent: () => void record.polls++,
      record,
    } as unknown as PeerFollower;
  });
  const recordOf = (follower: PeerFollower) =>
    (follower as unknown as { record: (typeof made)[number] }).record;
  return { registry, made, recordOf };
}

describe("NodeFollowers", () => {
  it("follows a reserved peer and an upstream at the same URL once, over the ws URL either has", () => {
    const { registry, made } = followers();
    const upstream = registry.acquire({ name: "node", http: "http://a:8545", ws: "ws://a:8546" });
    const peer = registry.acquire({ name: "peer", http: "http://a:8545" });
    expect(peer).toBe(upstream);
    expect(made).toHaveLength(1);
    expect(made[0]!.started).toBe(1);
    registry.pollIfSilent();
    expect(made[0]!.polls).toBe(1);
  });

  it("gives a role with a ws URL its own follower when the node's has none or another", () => {
    const { registry, made } = followers();
    const peer = registry.acquire({ name: "peer", http: "http://a:8545" });
    const upstream = registry.acquire({ name: "node", http: "http://a:8545", ws: "ws://a:8546" });
    const other = registry.acquire({ name: "other", http: "http://a:8545", ws: "ws://a:9999" });
    expect(new Set([peer, upstream, other]).size).toBe(3);
    // A later role without a ws URL takes one with a WebSocket.
    expect(registry.acquire({ name: "late", http: "http://a:8545" })).not.toBe(peer);
    expect(made).toHaveLength(3);
  });

  it("does not share between different nodes", () => {
    const { registry } = followers();
    const a = registry.acquire({ name: "a", http: "http://a:8545" });
    const b = registry.acquire({ name: "b", http: "http://b:8545" });
    expect(a).not.toBe(b);
    expect(registry.size).toBe(2);
  });

  it("stops a follower only when the last role using it ends", () => {
    const { registry, recordOf } = followers();
    const upstream = registry.acquire({ name: "node", http: "http://a:8545", ws: "ws://a:8546" });
    registry.acquire({ name: "peer", http: "http://a:8545" });
    registry.release(upstream);
    expect(recordOf(upstream).stopped).toBe(0);
    expect(registry.size).toBe(1);
    registry.release(upstream);
    expect(recordOf(upstream).stopped).toBe(1);
    expect(registry.size).toBe(0);
    // The node returning as an upstream is followed afresh.
    const again = registry.acquire({ name: "node", http: "http://a:8545", ws: "ws://a:8546" });
    expect(again).not.toBe(upstream);
    expect(recordOf(again).started).toBe(1);
  });
});
