import { describe, expect, it } from "vitest";
import { backoffMs, planRestarts, recentRestarts } from "../../src/health/restartPlanner.js";
import type { EngineOutput, NodeObservation, RestartRecord } from "../../src/health/types.js";
import { Scenario, T0, networkParams, node, peer, statusOf } from "./scenario.js";

const PROBE = 2_000;
const headAt = (now: number) => 1000 + Math.floor((now - T0) / 12_000);

/** A fleet that carries out restarts: in flight for `restartRounds` rounds, then a new incarnation. */
class SimFleet {
  readonly members = new Map<
    string,
    {
      startedAt: number;
      restarts: RestartRecord[];
      inFlightUntil?: number;
      healthy: (now: number) => boolean;
    }
  >();
  readonly restartLog: Array<{ at: number; node: string }> = [];

  constructor(
    private readonly sc: Scenario,
    private readonly restartMs = 6_000,
  ) {}

  add(name: string, healthy: (now: number) => boolean, restarts: RestartRecord[] = []): void {
    this.members.set(name, { startedAt: T0 - 3_600_000, restarts, healthy });
  }

  observe(now: number): NodeObservation[] {
    return [...this.members].map(([name, m]) => {
      if (m.inFlightUntil !== undefined && now >= m.inFlightUntil) {
        m.startedAt = m.inFlightUntil;
        m.inFlightUntil = undefined;
      }
      const base = { startedAt: m.startedAt, restarts: [...m.restarts] };
      if (m.inFlightUntil !== undefined) {
        return node(name, undefined, { ...base, reachable: false, restartInFlight: true });
      }
      return m.healthy(now)
        ? node(name, headAt(now), base)
        : node(name, undefined, { ...base, reachable: false });
    });
  }

  apply(out: EngineOutput, now: number): void {
    for (const d of out.decisions) {
      if (d.kind !== "restart") continue;
      const m = this.members.get(d.node)!;
      m.inFlightUntil = now + this.restartMs;
      m.restarts.push({ at: now, reason: d.reason });
      this.restartLog.push({ at: now, node: d.node });
    }
  }

  run(rounds: number): EngineOutput[] {
    const outputs: EngineOutput[] = [];
    for (let i = 0; i < rounds; i++) {
      const now = this.sc.now + PROBE;
      const out = this.sc.after(PROBE, {
        peers: [peer("a", headAt(now)), peer("b", headAt(now))],
        nodes: this.observe(now),
      });
      this.apply(out, now);
      outputs.push(out);
    }
    return outputs;
  }
}

const always = () => true;
const never = () => false;

describe("restart budget", () => {
  it.each([
    [1, [["d0"], ["d1"], ["d2"]]],
    [2, [["d0", "d1"], ["d2"]]],
  ])(
    "maxConcurrentRestarts %i: restarts wait for a free slot, counting those in flight",
    (max, expectedWaves) => {
      const sc = new Scenario(networkParams({ maxConcurrentRestarts: max }));
      const fleet = new SimFleet(sc, 30_000);
      for (let i = 0; i < 7; i++) fleet.add(`ok${i}`, always);
      for (let i = 0; i < 3; i++) fleet.add(`d${i}`, never);
      fleet.run(200);
      const byTime = new Map<number, string[]>();
      for (const r of fleet.restartLog) byTime.set(r.at, [...(byTime.get(r.at) ?? []), r.node]);
      const waves = [...byTime.values()];
      expect(waves.slice(0, expectedWaves.length)).toEqual(expectedWaves);
      // Never more restarts in flight than the budget.
      const times = fleet.restartLog.map((r) => r.at);
      for (const t of times)
        expect(times.filter((u) => u > t - 30_000 && u <= t).length).toBeLessThanOrEqual(max);
    },
  );

  it("a restart decision the backend has not carried out yet is not repeated before restartBackoffBase", () => {
    const sc = new Scenario();
    const outputs = sc.run(100, PROBE, (_i, now) => ({
      peers: [peer("a", headAt(now))],
      nodes: [node("d", undefined, { reachable: false })], // the backend never restarts it (e.g. PDB refusal)
    }));
    const restartRounds = outputs.flatMap((o, i) =>
      o.decisions.some((d) => d.kind === "restart") ? [i] : [],
    );
    // First at 122 s, then retried every 30 s (restartBackoffBase).
    expect(restartRounds.map((i) => (i + 1) * PROBE)).toEqual([122_000, 152_000, 182_000]);
    expect(statusOf(outputs[61]!, "d").state).toBe("Restarting");
  });
});

describe("per-node backoff", () => {
  it.each([
    [0, 0],
    [1, 30_000],
    [2, 60_000],
    [3, 120_000],
    [5, 480_000],
    [6, 600_000],
    [9, 600_000],
  ])("%i recent restarts: wait %i ms", (count, wait) => {
    expect(backoffMs(count, { restartBackoffBase: 30_000, restartBackoffMax: 600_000 })).toBe(wait);
  });

  it("a node restarted recently waits out its backoff before the next restart", () => {
    // Two restarts in the last hour, the last one 10 s before the node turns bad: backoff 60 s.
    const history: RestartRecord[] = [
      { at: T0 - 1_800_000, reason: "unresponsive" },
      { at: T0 - 10_000, reason: "unresponsive" },
    ];
    // restartAfter shortened to 10 s so that the 60 s backoff, not restartAfter, decides when.
    const quick = new Scenario(networkParams({ restartAfter: "10s" }));
    const quickOut = quick.run(40, PROBE, (_i, now) => ({
      peers: [peer("a", headAt(now))],
      nodes: [node("d", undefined, { reachable: false, restarts: history }), node("ok", headAt(now))],
    }));
    const first = quickOut.findIndex((o) => o.decisions.some((d) => d.kind === "restart"));
    expect(T0 + (first + 1) * PROBE).toBe(T0 - 10_000 + 60_000);
    expect(statusOf(quickOut[first - 1]!, "d").message).toMatch(
      /backoff for 2 s more after 2 recent restart/,
    );
  });

  it("restarts outside the crash-loop window no longer count", () => {
    const old = [1, 2, 3, 4, 5].map((i) => ({ at: T0 - 3_600_000 - i * 1000, reason: "lag" as const }));
    expect(recentRestarts(old, T0, 3_600_000, undefined).count).toBe(0);
    expect(recentRestarts(old, T0, 7_200_000, undefined).count).toBe(5);
    expect(recentRestarts(old, T0, 7_200_000, T0 - 3_602_500).count).toBe(2);
  });
});

describe("crash loop", () => {
  it("is reached after crashLoopAfter restarts within the window, and left once the node is Healthy", () => {
    const sc = new Scenario(networkParams({ crashLoopAfter: 3, restartAfter: "10s", startupGrace: "20s" }));
    const fleet = new SimFleet(sc, 4_000);
    let fixedAt = Number.POSITIVE_INFINITY;
    fleet.add("flaky", (now) => now >= fixedAt);
    for (let i = 0; i < 3; i++) fleet.add(`ok${i}`, always);

    const looping = fleet.run(300);
    expect(fleet.restartLog.map((r) => r.node)).toEqual(["flaky", "flaky", "flaky"]);
    const states = looping.map((o) => statusOf(o, "flaky").state);
    expect(states.at(-1)).toBe("CrashLoop");
    const entered = states.indexOf("CrashLoop");
    // Once in CrashLoop it stays there, with no more restarts, however long it stays bad.
    expect(states.slice(entered).every((s) => s === "CrashLoop")).toBe(true);
    expect(statusOf(looping.at(-1)!, "flaky").message).toContain("no automatic restart until healthy");

    // The node recovers: healthyAfter good probes make it Healthy and routed again.
    fixedAt = sc.now + PROBE;
    const recovering = fleet.run(5);
    expect(recovering.map((o) => statusOf(o, "flaky").state)).toEqual([
      "CrashLoop",
      "CrashLoop",
      "Healthy",
      "Healthy",
      "Healthy",
    ]);
    expect(recovering[2]!.decisions).toContainEqual({ kind: "route", node: "flaky" });

    // It breaks again within the hour: automatic restarts resume (the old restarts are forgiven).
    fixedAt = Number.POSITIVE_INFINITY;
    fleet.run(20);
    expect(fleet.restartLog.map((r) => r.node)).toEqual(["flaky", "flaky", "flaky", "flaky"]);
  });

  it("a crash loop is recognised from the restart history alone (e.g. after a controller restart)", () => {
    const plan = planRestarts(
      [
        {
          name: "x",
          reason: "unresponsive",
          dueSince: T0 - 200_000,
          restarts: [1, 2, 3, 4, 5].map((i) => ({ at: T0 - i * 600_000, reason: "unresponsive" as const })),
        },
        { name: "y", reason: "lag", dueSince: T0 - 150_000, restarts: [] },
      ],
      0,
      networkParams().health,
      T0,
    );
    expect(plan.crashLoop).toEqual(["x"]);
    expect(plan.restart).toEqual([{ name: "y", reason: "lag" }]);
  });

  it("no restarts at all when maxConcurrentRestarts is 0", () => {
    const plan = planRestarts(
      [{ name: "y", reason: "lag", dueSince: T0 - 150_000, restarts: [] }],
      0,
      { ...networkParams().health, maxConcurrentRestarts: 0 },
      T0,
    );
    expect(plan.restart).toEqual([]);
    expect(plan.held.get("y")).toContain("free slot");
  });
});
