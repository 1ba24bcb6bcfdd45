import { describe, expect, it } from "vitest";
import type { EngineOutput } from "../../src/health/types.js";
import { Scenario, T0, networkParams, node, peer, recentHashes, statusOf } from "./scenario.js";

/**
 * A node held exactly at maxLagBlocks on a 1 s chain probed every second, with the controller's timing: a round at
 * every new block (20 ms after the peers have it) and one probe interval after the last round began, plus any round
 * the engine asks for (nextRoundAt). A block reaches the light nodes 100 ms after the peers, so a round on a new block
 * sees a node at the threshold one block further behind, for that moment only.
 */
const BLOCK_MS = 1_000;
const PROBE_MS = 1_000;
const DELIVERY_MS = 100;
const ROUND_MS = 20;
const peerHeadAt = (t: number) => 500 + Math.floor((t - T0) / BLOCK_MS);
const deliveredAt = (t: number, delivery = DELIVERY_MS) => peerHeadAt(t - delivery);

function simulate(
  durationMs: number,
  lightHead: (name: string, t: number) => number,
  names: string[],
  probeMs = PROBE_MS,
) {
  const network = networkParams({ probeInterval: `${probeMs}ms`, maxLagBlocks: 3, stallAfter: "20s" }, "1s");
  const sc = new Scenario(network);
  const outputs: Array<{ at: number; output: EngineOutput }> = [];
  let nextBlock = T0 + BLOCK_MS;
  let periodic = T0;
  let asked: number | undefined;
  while (sc.now < T0 + durationMs) {
    const at = Math.min(nextBlock + ROUND_MS, periodic, asked ?? Infinity);
    if (at === nextBlock + ROUND_MS) nextBlock += BLOCK_MS;
    sc.now = at;
    periodic = at + probeMs;
    const head = peerHeadAt(at);
    const peerOf = (name: string) =>
      peer(name, head, { blockSeconds: 1, recentHashes: recentHashes(head, "main", 64) });
    const output = sc.round({
      peers: [peerOf("full-0"), peerOf("full-1")],
      nodes: names.map((name) => node(name, lightHead(name, at), { blockSeconds: 1 })),
    });
    asked = output.nextRoundAt !== undefined && output.nextRoundAt > at ? output.nextRoundAt : undefined;
    outputs.push({ at, output });
  }
  return outputs;
}

const unroutesOf = (outputs: Array<{ at: number; output: EngineOutput }>, name: string) =>
  outputs.filter((o) => o.output.decisions.some((d) => d.kind === "unroute" && d.node === name));

describe("a node held exactly at maxLagBlocks", () => {
  it("is over the threshold only between a block and its delivery: never unrouted in 82 s", () => {
    const outputs = simulate(82_000, (_name, t) => deliveredAt(t) - 3, ["held"]);
    expect(unroutesOf(outputs, "held")).toEqual([]);
    for (const { output } of outputs) expect(statusOf(output, "held").state).toBe("Healthy");
  });

  it("with 250 ms probes on a loaded machine (blocks reach it 400 ms late), it still never leaves routing", () => {
    // Held from 2 s on (the fault comes after the controller has seen a few blocks).
    const held = (t: number) => deliveredAt(t, 400) - (t >= T0 + 2_000 ? 3 : 0);
    const outputs = simulate(60_000, (_name, t) => held(t), ["held"], 250);
    expect(unroutesOf(outputs, "held")).toEqual([]);
  });

  it("a node held one block over it is unrouted and stays out", () => {
    const outputs = simulate(30_000, (_name, t) => deliveredAt(t) - 4, ["over"]);
    expect(unroutesOf(outputs, "over")).toHaveLength(1);
    expect(statusOf(outputs.at(-1)!.output, "over").routed).toBe(false);
  });

  it("a node that stops is out of routing within one block plus one probe of going over the threshold", () => {
    const stopAt = peerHeadAt(T0 + 10_000);
    const outputs = simulate(
      30_000,
      (name, t) => (name === "stops" ? Math.min(deliveredAt(t), stopAt) : deliveredAt(t)),
      ["stops", "steady"],
    );
    // The peers reach stopAt + maxLagBlocks + 1 at this time: from then on the node is over the threshold.
    const overAt = T0 + (stopAt + 4 - 500) * BLOCK_MS;
    const [unrouted, ...more] = unroutesOf(outputs, "stops");
    expect(more).toEqual([]);
    expect(unrouted!.at - overAt).toBeLessThanOrEqual(BLOCK_MS + PROBE_MS);
    expect(unroutesOf(outputs, "steady")).toEqual([]);
  });
});
