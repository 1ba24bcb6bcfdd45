import { describe, expect, it } from "vitest";
import type { NodeState } from "../../src/health/types.js";
import { Scenario, T0, allDecisions, networkParams, node, peer, statusOf } from "./scenario.js";

const PROBE = 2_000;
const headAt = (now: number) => 1000 + Math.floor((now - T0) / 12_000);

/** Feeds a probe pattern (G: in sync, B: 5 blocks behind, L: lag 3, at the threshold; M: lag 4, just over it). */
function play(pattern: string, options: { routed: boolean; health?: Record<string, unknown> }) {
  const sc = new Scenario(networkParams(options.health ?? {}));
  const lagOf: Record<string, number> = { G: 0, B: 5, L: 3, M: 4 };
  const outputs = sc.run(pattern.length, PROBE, (i, now) => ({
    peers: [peer("a", headAt(now))],
    nodes: [node("n", headAt(now) - lagOf[pattern[i]!]!, { routed: options.routed })],
  }));
  return {
    states: outputs.map((o) => statusOf(o, "n").state),
    routes: allDecisions(outputs, "route").length,
    unroutes: allDecisions(outputs, "unroute").length,
  };
}

const H: NodeState = "Healthy";
const L: NodeState = "Lagging";

describe("hysteresis (unhealthyAfter 2, healthyAfter 3)", () => {
  it.each<[string, string, boolean, NodeState[], number, number]>([
    ["one bad probe does not leave Healthy", "GBG", true, [H, H, H], 0, 0],
    ["two bad probes in a row do", "GBB", true, [H, H, L], 0, 1],
    ["alternating good and bad never leaves Healthy", "BGBGBGBGBG", true, Array(10).fill(H), 0, 0],
    [
      "oscillating around maxLagBlocks (3, 4, 3, 4, ...) does not flap",
      "LMLMLMLMLMLM",
      true,
      Array(12).fill(H),
      0,
      0,
    ],
    ["two good probes do not return a Lagging node", "BBBGGB", true, [H, L, L, L, L, L], 0, 1],
    ["three good probes in a row do", "BBGGG", true, [H, L, L, L, H], 1, 1],
    [
      "a Lagging node oscillating stays out of routing",
      "BBGBGBGGBGGB",
      true,
      [H, ...Array(11).fill(L)],
      0,
      1,
    ],
  ])("%s", (_title, pattern, routed, states, routes, unroutes) => {
    const result = play(pattern, { routed });
    expect(result.states).toEqual(states);
    expect(result.routes).toBe(routes);
    expect(result.unroutes).toBe(unroutes);
  });

  it("the thresholds are configurable", () => {
    const result = play("BBBBGG", { routed: true, health: { unhealthyAfter: 4, healthyAfter: 2 } });
    expect(result.states).toEqual([H, H, H, L, L, H]);
  });
});
