import { describe, expect, it } from "vitest";
import type { EngineOutput } from "../../src/health/types.js";
import { anvilPidOf, restartsOf, routedFleets, statusIn } from "../support/devnetFleet.js";
import { waitFor } from "../support/waitFor.js";

const BLOCK_MS = 500;
const PROBE_MS = 200;
const HEALTH = {
  probeInterval: `${PROBE_MS}ms`,
  maxLagBlocks: 3,
  // Lag alone never restarts here, so the lag test sees routing only.
  restartLagBlocks: 1_000,
  unhealthyAfter: 2,
  healthyAfter: 2,
  stallAfter: "1500ms",
  restartAfter: "2s",
  restartBackoffBase: "2s",
  startupGrace: "20s",
};
const NODE = "devnet-light-1";

const healthyFleet = routedFleets({ blockTimeMs: BLOCK_MS, health: HEALTH });

describe("controller on a real devnet", () => {
  it("takes a lagging node out of routing within unhealthyAfter probes of crossing the threshold, and back after healthyAfter", async () => {
    // A node held back stops climbing for a while: no stall verdict here, only lag.
    const f = await healthyFleet({ stallAfter: "1m" });
    const from = f.outputs.length;
    await f.devnet.fault(NODE, { kind: "lag", blocks: 6 });
    await waitFor(() => !f.routed().includes(NODE), { what: `${NODE} unrouted`, timeoutMs: 10_000 });
    const rounds = f.outputs.slice(from);
    // Crossing the threshold is the first probe that finds the node too far behind (in blocks, or in seconds of block
    // timestamps, whichever comes first) once the block that put it there has had its delivery allowance (a probe
    // within it shows the lag but counts neither way, as does a round whose probe is still outstanding on a loaded
    // machine); the unhealthyAfter-th bad probe in a row unroutes it.
    const pending = (o: EngineOutput) => {
      const status = statusIn(o, NODE);
      return status?.reason === "awaiting" || /within their delivery/.test(status?.message ?? "");
    };
    const crossed = rounds.findIndex((o) => statusIn(o, NODE)?.reason === "lag" && !pending(o));
    const unrouted = rounds.findIndex((o) =>
      o.decisions.some((d) => d.kind === "unroute" && d.node === NODE),
    );
    expect(crossed).toBeGreaterThanOrEqual(0);
    expect(rounds.slice(0, crossed).map((o) => (pending(o) ? "ok" : statusIn(o, NODE)?.reason))).toEqual(
      Array(crossed).fill("ok"),
    );
    const counted = rounds.slice(crossed, unrouted + 1).filter((o) => !pending(o));
    expect(counted).toHaveLength(HEALTH.unhealthyAfter);
    expect(f.stateOf(NODE)).toBe("Lagging");
    expect(f.routed()).toHaveLength(2);

    const healFrom = f.outputs.length;
    await f.devnet.fault(NODE, { kind: "heal" });
    await waitFor(() => f.routed().includes(NODE), { what: `${NODE} routed again`, timeoutMs: 10_000 });
    const after = f.outputs.slice(healFrom);
    const routed = after.findIndex((o) => o.decisions.some((d) => d.kind === "route" && d.node === NODE));
    // Routed on the healthyAfter-th good probe in a row: that many good rounds end with the routing one, and the
    // round before them was not good (or came before the heal). Rounds without evidence count neither way.
    const judged = after.slice(0, routed + 1).filter((o) => !pending(o));
    const streak = judged.slice(-HEALTH.healthyAfter);
    expect(streak.map((o) => statusIn(o, NODE)?.reason)).toEqual(Array(HEALTH.healthyAfter).fill("ok"));
    const before = judged.length - HEALTH.healthyAfter - 1;
    if (before >= 0) expect(statusIn(judged[before]!, NODE)?.reason).not.toBe("ok");
    else expect(statusIn(f.outputs[healFrom - 1]!, NODE)?.reason).not.toBe("ok");
    expect(restartsOf(f, NODE)).toEqual([]);
  });

  it("restarts a stalled node after restartAfter; the new incarnation replays to the head and becomes Healthy", async () => {
    const f = await healthyFleet();
    const before = f.fleet.members("devnet").find((m) => m.name === NODE)!;
    const stalledAt = Date.now();
    await f.devnet.fault(NODE, { kind: "stall" });
    await waitFor(() => restartsOf(f, NODE).length > 0, { what: "a restart", timeoutMs: 15_000 });
    const [restart] = restartsOf(f, NODE);
    expect(restart!.reason).toBe("stall");
    // restartAfter (2 s) from the round that first found it bad, whose clock may be read up to one probe interval
    // before the fault landed.
    expect(restart!.at - stalledAt).toBeGreaterThanOrEqual(2_000 - 200);
    await waitFor(() => f.stateOf(NODE) === "Healthy" && f.routed().includes(NODE), {
      what: `${NODE} Healthy after the restart`,
      timeoutMs: 15_000,
    });
    const after = f.fleet.members("devnet").find((m) => m.name === NODE)!;
    expect(after.startedAt).toBeGreaterThan(before.startedAt);
    const head = f.devnet.head("devnet").number;
    expect(statusIn(f.outputs.at(-1)!, NODE)!.head).toBeGreaterThanOrEqual(head - HEALTH.maxLagBlocks);
    expect(restartsOf(f, NODE)).toHaveLength(1);
  });

  it("marks a forked node Diverged", async () => {
    const f = await healthyFleet();
    await f.devnet.fault(NODE, { kind: "fork" });
    await waitFor(() => f.stateOf(NODE) === "Diverged", { what: `${NODE} Diverged`, timeoutMs: 10_000 });
    const status = statusIn(f.controller.lastOutput("devnet")!, NODE)!;
    expect(status.reason).toBe("hash-mismatch");
    expect(status.routed).toBe(false);
    expect(f.routed()).not.toContain(NODE);
  });

  it("sees a killed node Unresponsive, then restarts it and routes it again", async () => {
    const f = await healthyFleet();
    await f.devnet.fault(NODE, { kind: "kill" });
    await waitFor(() => f.stateOf(NODE) === "Unresponsive", {
      what: `${NODE} Unresponsive`,
      timeoutMs: 10_000,
    });
    expect(f.routed()).not.toContain(NODE);
    await waitFor(() => restartsOf(f, NODE).length > 0, { what: "a restart", timeoutMs: 15_000 });
    expect(restartsOf(f, NODE)[0]!.reason).toBe("unresponsive");
    await waitFor(() => f.stateOf(NODE) === "Healthy" && f.routed().includes(NODE), {
      what: `${NODE} Healthy after the restart`,
      timeoutMs: 15_000,
    });
  });

  it("takes a hung node (accepts connections, never answers) out of routing within a block plus a probe interval, and restarts it once", async () => {
    const f = await healthyFleet();
    const from = f.outputs.length;
    const pid = anvilPidOf(f, NODE);
    const hungAt = Date.now();
    process.kill(pid, "SIGSTOP");
    try {
      await waitFor(() => !f.routed().includes(NODE), { what: `${NODE} unrouted`, timeoutMs: 10_000 });
      const unroutedAfter = Date.now() - hungAt;
      // The silence limit (one block plus one probe interval from its last answer, which came before the hang), and at
      // most one more probe interval to finish that round (its wait for the other nodes' answers) on a busy machine.
      // Waiting for probe timeouts instead would take unhealthyAfter x probeTimeout, 3 s.
      expect(unroutedAfter).toBeLessThanOrEqual(BLOCK_MS + 2 * PROBE_MS);
      expect(f.stateOf(NODE)).toBe("Unresponsive");
      await waitFor(() => restartsOf(f, NODE).length > 0, { what: "a restart", timeoutMs: 15_000 });
    } finally {
      // The old process is stopped by the restart; a continued one exits on the SIGTERM it holds.
      try {
        process.kill(pid, "SIGCONT");
      } catch {
        // already gone
      }
    }
    expect(restartsOf(f, NODE).map((r) => r.reason)).toEqual(["unresponsive"]);
    await waitFor(() => f.stateOf(NODE) === "Healthy" && f.routed().includes(NODE), {
      what: `${NODE} Healthy after the restart`,
      timeoutMs: 15_000,
    });
    const rounds = f.outputs.slice(from);
    const unrouted = rounds.flatMap((o) =>
      o.decisions.filter((d) => d.kind === "unroute").map((d) => d.node),
    );
    expect(unrouted).toEqual([NODE]);
    expect(restartsOf(f, NODE)).toHaveLength(1);
    for (const other of f.fleet.members("devnet").filter((m) => m.name !== NODE))
      expect(other.restarts).toEqual([]);
  });

  it("restarts nothing while the full nodes are down, keeps routing and reports the systemic cause", async () => {
    const f = await healthyFleet();
    await f.devnet.fault("devnet-full-0", { kind: "kill" });
    await f.devnet.fault("devnet-full-1", { kind: "kill" });
    await waitFor(() => f.controller.lastOutput("devnet")?.systemic?.cause === "no-peer-reachable", {
      what: "systemic cause",
      timeoutMs: 10_000,
    });
    // Twenty more rounds last beyond restartAfter (2 s): any restart would have been asked for by then.
    const rounds = f.outputs.length;
    await waitFor(() => f.outputs.length >= rounds + 20, { what: "twenty more rounds", timeoutMs: 15_000 });
    expect(f.controller.lastOutput("devnet")?.systemic?.cause).toBe("no-peer-reachable");
    for (const member of f.fleet.members("devnet")) expect(member.restarts).toEqual([]);
    expect(f.routed()).toHaveLength(3);
    expect(await f.registry.metrics()).toContain(
      'lightfleet_pool_systemic_failure{network="devnet",cause="no-peer-reachable"} 1',
    );
  });
});
