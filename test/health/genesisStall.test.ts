import { describe, expect, it } from "vitest";
import { Scenario, T0, allDecisions, networkParams, node, peer, statusOf } from "./scenario.js";

/**
 * A node that answered in step with the chain at genesis (height 0), then stopped climbing while the peers went on.
 * It has synced (to genesis): height 0 is its head, not a sign that it never synced. It stalled, and is judged as any
 * other stuck head: Lagging once over the lag threshold, restarted for the stall. 1 s blocks, 250 ms probes.
 */
const BLOCK_MS = 1_000;
const PROBE_MS = 250;
const opts = { blockSeconds: 1 };
const health = {
  probeInterval: `${PROBE_MS}ms`,
  maxLagBlocks: 3,
  restartLagBlocks: 32,
  stallAfter: "6s",
  restartAfter: "2s",
  startupGrace: "20s",
};

describe("a node in step at genesis that then stalls at height 0", () => {
  it("is Lagging for a stall (its head has not climbed), not 'reports height 0', and restarted for the stall", () => {
    const sc = new Scenario(networkParams(health, `${BLOCK_MS}ms`));
    const startedAt = T0;
    // The chain waits at genesis for 2 s (both the peers and the node at 0), then climbs one block a second.
    const chainAt = (now: number) => Math.max(0, Math.floor((now - T0 - 2_000) / BLOCK_MS));
    const outputs = sc.run(4 * 20, PROBE_MS, (_i, now) => ({
      peers: [peer("full-0", chainAt(now), opts), peer("full-1", chainAt(now), opts)],
      nodes: [
        node("in-step", chainAt(now), { ...opts, startedAt, routed: false }),
        node("stuck", 0, { ...opts, startedAt, routed: false }),
      ],
    }));
    // Both were Healthy at genesis (in this incarnation, on their own answers).
    const atGenesis = outputs[6]!;
    expect(statusOf(atGenesis, "stuck")).toMatchObject({ state: "Healthy", head: 0 });
    const stuck = outputs.map((o) => statusOf(o, "stuck"));
    expect(stuck.filter((s) => s.reason === "height-zero")).toEqual([]);
    expect(stuck.some((s) => /reports height 0/.test(s.message))).toBe(false);
    const lagging = stuck.find((s) => s.state === "Lagging")!;
    expect(lagging.message).toMatch(/behind reference/);
    expect(
      stuck.some((s) => s.reason === "stall" && /head 0 has not climbed for \d+ s/.test(s.message)),
    ).toBe(true);
    const restarts = outputs.flatMap((o) => o.decisions.filter((d) => d.kind === "restart"));
    expect(restarts).toEqual([{ kind: "restart", node: "stuck", reason: "stall" }]);
    expect(allDecisions(outputs, "unroute")).toEqual(["stuck"]);
  });

  it("a node that never answered in step (fresh, the chain far from genesis) still reads as 'reports height 0'", () => {
    const sc = new Scenario(networkParams(health, `${BLOCK_MS}ms`));
    const outputs = sc.run(8, PROBE_MS, () => ({
      peers: [peer("full-0", 500, opts), peer("full-1", 500, opts)],
      nodes: [node("fresh", 0, { ...opts, startedAt: T0 - 60_000, routed: false })],
    }));
    expect(statusOf(outputs.at(-1)!, "fresh")).toMatchObject({
      reason: "height-zero",
      message: /reports height 0/,
    });
  });
});
