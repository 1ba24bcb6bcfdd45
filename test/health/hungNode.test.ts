import { describe, expect, it } from "vitest";
import type { NodeObservation } from "../../src/health/types.js";
import { Scenario, T0, allDecisions, networkParams, node, peer, statusOf } from "./scenario.js";

/**
 * A hung node accepts the probe's connection and never answers. The controller's rounds do not wait for it: a round
 * reports a node whose probe is still outstanding as unanswered since its last answer. 1 s blocks, 250 ms probes,
 * otherwise the shipped defaults (probeTimeout 1.5 s, unhealthyAfter 2, restartAfter 120 s).
 */
const BLOCK_MS = 1_000;
const PROBE_MS = 250;
const SILENCE_LIMIT = BLOCK_MS + PROBE_MS;
const headAt = (now: number) => 1000 + Math.floor((now - T0) / BLOCK_MS);
const opts = { blockSeconds: 1 };
const peers = (now: number) => [peer("full-0", headAt(now), opts), peer("full-1", headAt(now), opts)];
const answering = (name: string, now: number) => node(name, headAt(now), opts);
const unanswered = (name: string, since: number): NodeObservation => ({
  ...node(name, undefined, opts),
  reachable: false,
  error: "no answer yet",
  unansweredSince: since,
});
const world = () => new Scenario(networkParams({ probeInterval: `${PROBE_MS}ms` }, `${BLOCK_MS}ms`));

describe("a hung node (1 s blocks, 250 ms probes, default probeTimeout)", () => {
  it("leaves routing in the first round that finds it unanswered for a block plus a probe interval while the peers moved on", () => {
    const sc = world();
    sc.run(8, PROBE_MS, (_i, now) => ({
      peers: peers(now),
      nodes: [answering("a", now), answering("hung", now), answering("c", now)],
    }));
    const lastAnswer = sc.now;
    // The only round before the probe timeout that reports it: its probe has been out for 1.25 s.
    const out = sc.after(SILENCE_LIMIT, {
      peers: peers(sc.now + SILENCE_LIMIT),
      nodes: [answering("a", sc.now), unanswered("hung", lastAnswer), answering("c", sc.now)],
    });
    expect(statusOf(out, "hung").state).toBe("Unresponsive");
    expect(statusOf(out, "hung").routed).toBe(false);
    expect(statusOf(out, "hung").message).toMatch(/no answer for 1\.25 s/);
    expect(allDecisions([out], "unroute")).toEqual(["hung"]);
    expect(allDecisions([out], "restart")).toEqual([]);
  });

  it("is out of routing within one block plus one probe of its last answer, and not before; restarted once after restartAfter", () => {
    const sc = world();
    const hangAt = T0 + 5_000;
    let lastAnswer = T0;
    const outputs = sc.run(4 * 130, PROBE_MS, (_i, now) => {
      if (now <= hangAt) lastAnswer = now;
      return {
        peers: peers(now),
        nodes: [
          answering("a", now),
          now <= hangAt ? answering("hung", now) : unanswered("hung", lastAnswer),
          answering("c", now),
        ],
      };
    });
    const at = (i: number) => T0 + (i + 1) * PROBE_MS;
    const unroutedAt = at(outputs.findIndex((o) => o.decisions.some((d) => d.kind === "unroute")));
    expect(unroutedAt - lastAnswer).toBe(SILENCE_LIMIT);
    expect(allDecisions(outputs, "unroute")).toEqual(["hung"]);
    const restarts = outputs.flatMap((o, i) =>
      o.decisions.filter((d) => d.kind === "restart").map((d) => ({ ...d, at: at(i) })),
    );
    expect(restarts).toEqual([
      { kind: "restart", node: "hung", reason: "unresponsive", at: unroutedAt + 120_000 },
    ]);
  });

  it("stays routed, with its state and streaks, while its probe is out for less than that", () => {
    const sc = world();
    sc.run(8, PROBE_MS, (_i, now) => ({ peers: peers(now), nodes: [answering("slow", now)] }));
    const lastAnswer = sc.now;
    const outputs = sc.run(4, PROBE_MS, (_i, now) => ({
      peers: peers(now),
      nodes: [unanswered("slow", lastAnswer)],
    }));
    expect(outputs.map((o) => statusOf(o, "slow").state)).toEqual(Array(4).fill("Healthy"));
    expect(outputs.map((o) => statusOf(o, "slow").reason)).toEqual(Array(4).fill("awaiting"));
    expect(allDecisions(outputs, "unroute")).toEqual([]);
  });

  it("a good but slow node (answers take up to a block) is never unrouted nor restarted", () => {
    const sc = world();
    let lastAnswer = T0;
    // An answer every fourth round (a second apart), its head up to a block old; unanswered in between.
    const outputs = sc.run(4 * 300, PROBE_MS, (i, now) => {
      const answers = i % 4 === 3;
      if (answers) lastAnswer = now;
      return {
        peers: peers(now),
        nodes: [
          answering("a", now),
          answers ? node("slow", headAt(now) - (i % 8 === 3 ? 1 : 0), opts) : unanswered("slow", lastAnswer),
        ],
      };
    });
    expect(allDecisions(outputs, "unroute")).toEqual([]);
    expect(allDecisions(outputs, "restart")).toEqual([]);
    expect(outputs.every((o) => statusOf(o, "slow").state === "Healthy")).toBe(true);
  });

  it("while the peers do not move on (a halt), silence alone unroutes nothing: it waits for the probe to fail", () => {
    const sc = world();
    const halted = headAt(T0 + 2_000);
    sc.run(8, PROBE_MS, (_i, now) => ({
      peers: peers(now),
      nodes: [answering("a", now), answering("b", now)],
    }));
    const lastAnswer = sc.now;
    const outputs = sc.run(8, PROBE_MS, () => ({
      peers: [peer("full-0", halted, opts), peer("full-1", halted, opts)],
      nodes: [node("a", halted, opts), unanswered("b", lastAnswer)],
    }));
    expect(allDecisions(outputs, "unroute")).toEqual([]);
  });
});
