import { describe, expect, it } from "vitest";
import type { EngineOutput } from "../../src/health/types.js";
import { Scenario, T0, allDecisions, networkParams, node, peer, recentHashes, statusOf } from "./scenario.js";

/** A 1 s chain at block 2,400; a light node restarted at T0 replays its chain from 0. */
const BLOCK_MS = 1_000;
const headAt = (now: number) => 2_400 + Math.floor((now - T0) / BLOCK_MS);
const network = networkParams(
  {
    probeInterval: "1s",
    maxLagBlocks: 3,
    restartLagBlocks: 12,
    stallAfter: "8s",
    restartAfter: "4s",
    startupGrace: "60s",
  },
  "1s",
);

/** Rounds every second for `seconds`, the node's head given by `climb` (seconds since its start). */
function replay(seconds: number, climb: (s: number, chainHead: number) => number): EngineOutput[] {
  const sc = new Scenario(network);
  return sc.run(seconds, BLOCK_MS, (i, now) => {
    const head = headAt(now);
    const full = (name: string) =>
      peer(name, head, { blockSeconds: 1, recentHashes: recentHashes(head, "main", 64) });
    return {
      peers: [full("full-0"), full("full-1")],
      nodes: [
        node("replaying", Math.min(head, climb(i + 1, head)), {
          blockSeconds: 1,
          startedAt: T0,
          routed: false,
        }),
      ],
    };
  });
}

describe("a restarted node replaying toward the reference", () => {
  it("is recovering past startupGrace while it closes the gap: Starting, never restarted, then Healthy", () => {
    // 30 blocks a second against a chain of one: it catches up after about 83 s, past the 60 s grace.
    const outputs = replay(100, (s) => 30 * s);
    expect(allDecisions(outputs, "restart")).toEqual([]);
    const states = outputs.map((o) => statusOf(o, "replaying").state);
    const healthyAt = states.indexOf("Healthy");
    expect(healthyAt).toBeGreaterThan(80);
    expect(states.slice(0, healthyAt).every((s) => s === "Starting")).toBe(true);
    expect(statusOf(outputs[70]!, "replaying").message).toMatch(/catching up/);
  });

  it("a node that climbs but never closes the gap is acted on once the grace is over", () => {
    // It follows the chain 100 blocks behind: progress, but none toward the reference.
    const outputs = replay(80, (_s, head) => head - 100);
    const restarts = outputs.findIndex((o) => o.decisions.some((d) => d.kind === "restart"));
    expect(restarts).toBeGreaterThanOrEqual(60);
    expect(restarts).toBeLessThan(60 + 4 + 3);
  });

  it("the grace a slow climb earns is bounded: three times startupGrace at most", () => {
    // Closes the gap by a block every 2 s: it would take over an hour.
    const outputs = replay(200, (s, head) => head - 2_400 + Math.floor(s / 2) * 3);
    const restartAt = outputs.findIndex((o) => o.decisions.some((d) => d.kind === "restart"));
    expect(restartAt).toBeGreaterThanOrEqual(180);
    expect(restartAt).toBeLessThan(180 + 4 + 3);
  });
});

describe("the transition out of Restarting", () => {
  it("says the node was restarted and is awaited, not that a probe has had no answer for 0 s", () => {
    const sc = new Scenario(network);
    const peers = () => [peer("full-0", headAt(sc.now), { blockSeconds: 1 })];
    sc.round({
      peers: peers(),
      nodes: [node("n", headAt(sc.now), { blockSeconds: 1, restartInFlight: true })],
    });
    const out = sc.after(1_000, {
      peers: peers(),
      nodes: [node("n", undefined, { startedAt: sc.now, reachable: false, unansweredSince: sc.now })],
    });
    const transition = out.decisions.find((d) => d.kind === "transition");
    expect(transition).toMatchObject({ from: "Restarting", to: "Starting" });
    expect(transition).toMatchObject({ message: "started, waiting for its first answer" });
  });
});
