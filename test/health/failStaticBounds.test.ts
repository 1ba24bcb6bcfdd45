import { describe, expect, it } from "vitest";
import type { EngineOutput, NodeObservation, RestartRecord } from "../../src/health/types.js";
import { Scenario, T0, allDecisions, networkParams, node, peer, statusOf } from "./scenario.js";

const PROBE = 2_000;
const RESTART_MS = 6_000;
const headAt = (now: number) => 1000 + Math.floor((now - T0) / 12_000);

/** What a node does before its first restart: its head at `now`, or undefined when it does not answer. */
type Fault = (now: number) => number | undefined;

/**
 * A pool of three where some nodes break at T0: the fleet carries out restarts (in flight for RESTART_MS, then a new
 * incarnation that follows the chain), peers agree all along unless `peersUp` says otherwise.
 */
function runPool(
  faults: Record<string, Fault | undefined>,
  rounds: number,
  options: { health?: Record<string, unknown>; peersUp?: (now: number) => boolean } = {},
) {
  const sc = new Scenario(networkParams(options.health));
  const names = Object.keys(faults);
  const restarts = new Map<string, RestartRecord[]>(names.map((n) => [n, []]));
  const started = new Map<string, number>(names.map((n) => [n, T0 - 3_600_000]));
  const inFlightUntil = new Map<string, number>();
  const log: Array<{ at: number; node: string }> = [];
  const observe = (now: number): NodeObservation[] =>
    names.map((name) => {
      const until = inFlightUntil.get(name);
      if (until !== undefined && now >= until) {
        started.set(name, until);
        inFlightUntil.delete(name);
      }
      const base = { startedAt: started.get(name)!, restarts: [...restarts.get(name)!] };
      if (inFlightUntil.has(name))
        return node(name, undefined, { ...base, reachable: false, restartInFlight: true });
      const fault = restarts.get(name)!.length === 0 ? faults[name] : undefined;
      const head = fault ? fault(now) : headAt(now);
      return head === undefined
        ? node(name, undefined, { ...base, reachable: false })
        : node(name, head, base);
    });
  sc.round({
    peers: [peer("a", headAt(T0)), peer("b", headAt(T0))],
    nodes: names.map((n) => node(n, headAt(T0))),
  });
  const outputs: EngineOutput[] = [];
  for (let i = 0; i < rounds; i++) {
    const now = sc.now + PROBE;
    const up = options.peersUp?.(now) ?? true;
    const out = sc.after(PROBE, {
      peers: [peer("a", headAt(now), { reachable: up }), peer("b", headAt(now), { reachable: up })],
      nodes: observe(now),
    });
    for (const d of out.decisions) {
      if (d.kind !== "restart") continue;
      restarts.get(d.node)!.push({ at: now, reason: d.reason });
      inFlightUntil.set(d.node, now + RESTART_MS);
      log.push({ at: now, node: d.node });
    }
    outputs.push(out);
  }
  return { sc, outputs, log };
}

const dead: Fault = () => undefined;
const stalled60: Fault = () => headAt(T0) - 60;

describe("fail static is bounded by the evidence", () => {
  it("two of three nodes killed while the peers agree and the third keeps up: out of routing at once, restarted one at a time", () => {
    const { outputs, log } = runPool({ n1: dead, n2: dead, n3: undefined }, 150);
    expect(outputs.every((o) => o.systemic === undefined)).toBe(true);
    // unhealthyAfter (2) probes, and both leave together.
    expect(outputs[1]!.decisions.filter((d) => d.kind === "unroute").map((d) => d.node)).toEqual([
      "n1",
      "n2",
    ]);
    expect(log.map((r) => r.node).sort()).toEqual(["n1", "n2"]);
    // One at a time: the second only once the first is no longer in flight.
    expect(log[1]!.at - log[0]!.at).toBeGreaterThanOrEqual(RESTART_MS);
    expect(log[0]!.at - T0).toBeLessThanOrEqual(120_000 + 2 * PROBE);
    expect(outputs.at(-1)!.nodes.map((n) => [n.state, n.routed])).toEqual([
      ["Healthy", true],
      ["Healthy", true],
      ["Healthy", true],
    ]);
  });

  it("two of three stalled 60 blocks behind while the peers agree and the third keeps up: Lagging, unrouted, restarted", () => {
    const { outputs, log } = runPool({ n1: stalled60, n2: stalled60, n3: undefined }, 80);
    expect(outputs.every((o) => o.systemic === undefined)).toBe(true);
    expect(statusOf(outputs[1]!, "n1")).toMatchObject({ state: "Lagging", routed: false });
    expect(statusOf(outputs[1]!, "n2")).toMatchObject({ state: "Lagging", routed: false });
    expect(log.map((r) => r.node).sort()).toEqual(["n1", "n2"]);
    expect(log[1]!.at - log[0]!.at).toBeGreaterThanOrEqual(RESTART_MS);
  });

  it("the whole pool turning bad at once is held, for failStaticMaxHold at most, and says so", () => {
    const { outputs, log } = runPool({ n1: dead, n2: dead, n3: dead }, 240, {
      health: { failStaticMaxHold: "5m" },
    });
    const held = outputs.filter((o) => o.systemic?.cause === "pool-mostly-bad");
    expect(held.length).toBeGreaterThan(0);
    expect(held[0]!.systemic!.message).toMatch(/held for at most 300 s/);
    expect(held[0]!.systemic!.holdUntil).toBe(held[0]!.systemic!.since! + 300_000);
    const releasedAt = outputs.findIndex((o) => o.failStaticReleased !== undefined);
    expect(releasedAt).toBeGreaterThan(0);
    expect(outputs[releasedAt]!.failStaticReleased).toMatchObject({ cause: "pool-mostly-bad" });
    expect(outputs[releasedAt]!.systemic).toBeUndefined();
    // Nothing moved while held; once released, the dead nodes leave routing at once and are restarted one at a time.
    expect(allDecisions(outputs.slice(0, releasedAt), "unroute")).toEqual([]);
    expect(allDecisions(outputs.slice(0, releasedAt), "restart")).toEqual([]);
    expect(outputs[releasedAt]!.decisions.filter((d) => d.kind === "unroute")).toHaveLength(3);
    expect(outputs.slice(releasedAt + 1).every((o) => o.systemic === undefined)).toBe(true);
    expect(log.map((r) => r.node).sort()).toEqual(["n1", "n2", "n3"]);
    for (let i = 1; i < log.length; i++)
      expect(log[i]!.at - log[i - 1]!.at).toBeGreaterThanOrEqual(RESTART_MS);
  });

  it("a peer outage is held for failStaticMaxHold at most: then a dead node is judged on its own", () => {
    const { outputs, log } = runPool({ n1: dead, n2: undefined, n3: undefined }, 250, {
      health: { failStaticMaxHold: "5m" },
      peersUp: () => false,
    });
    expect(outputs[0]!.systemic?.cause).toBe("no-peer-reachable");
    const releasedAt = outputs.findIndex((o) => o.failStaticReleased !== undefined);
    expect((releasedAt + 1) * PROBE).toBeGreaterThanOrEqual(300_000);
    expect((releasedAt + 1) * PROBE).toBeLessThanOrEqual(300_000 + 2 * PROBE);
    expect(outputs[releasedAt]!.failStaticReleased?.cause).toBe("no-peer-reachable");
    // Still reported as released every round while the peers stay away.
    expect(outputs.at(-1)!.failStaticReleased?.cause).toBe("no-peer-reachable");
    expect(allDecisions(outputs.slice(0, releasedAt), "restart")).toEqual([]);
    expect(log.map((r) => r.node)).toEqual(["n1"]);
    expect(statusOf(outputs.at(-1)!, "n2").routed).toBe(true);
  });
});
