import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { evaluateNetwork } from "../../src/health/engine.js";
import type { EngineOutput, NetworkHealthState, NodeState, RestartRecord } from "../../src/health/types.js";
import { T0, networkParams, node, peer } from "./scenario.js";

/** What a node does in one round; what the peers do. */
const NODE_BEHAVIOURS = [
  "sync",
  "behind1",
  "behind5",
  "behind40",
  "dead",
  "nohead",
  "zero",
  "syncing",
  "wrongchain",
];
const PEER_BEHAVIOURS = ["ok", "ok", "ok", "down", "racing", "fork"];
const NODES = 6;

const roundArb = fc.record({
  nodes: fc.array(fc.constantFrom(...NODE_BEHAVIOURS), { minLength: NODES, maxLength: NODES }),
  peers: fc.array(fc.constantFrom(...PEER_BEHAVIOURS), { minLength: 3, maxLength: 3 }),
  /** Rounds to skip on the clock (probes can be late). */
  gap: fc.integer({ min: 1, max: 20 }),
});

const healthArb = fc.record({
  maxConcurrentRestarts: fc.integer({ min: 0, max: 3 }),
  unhealthyAfter: fc.integer({ min: 1, max: 3 }),
  healthyAfter: fc.integer({ min: 1, max: 4 }),
  restartAfter: fc.constantFrom("4s", "20s", "2m"),
  crashLoopAfter: fc.integer({ min: 1, max: 4 }),
  startupGrace: fc.constantFrom("10s", "10m"),
});

describe("engine invariants over random fleets (fast-check)", () => {
  it("routing follows Healthy, fail static freezes everything, restarts respect the budget", () => {
    fc.assert(
      fc.property(healthArb, fc.array(roundArb, { minLength: 10, maxLength: 60 }), (health, rounds) => {
        const network = networkParams(health);
        const fleet = Array.from({ length: NODES }, (_, i) => ({
          name: `n${i}`,
          startedAt: T0 - 3_600_000,
          routed: true,
          restarts: [] as RestartRecord[],
          inFlightRounds: 0,
        }));
        let previous: NetworkHealthState | undefined;
        let lastStates = new Map<string, NodeState>();
        let now = T0;
        for (const r of rounds) {
          now += r.gap * 2_000;
          const head = 1000 + Math.floor((now - T0) / 12_000);
          const peers = r.peers.map((b, i) =>
            b === "down"
              ? peer(`p${i}`, head, { reachable: false })
              : b === "racing"
                ? peer(`p${i}`, head + 1_000_000, { chain: "evil" })
                : b === "fork"
                  ? peer(`p${i}`, head, { chain: "fork" })
                  : peer(`p${i}`, head),
          );
          const observations = fleet.map((m, i) => {
            const base = { startedAt: m.startedAt, restarts: [...m.restarts], routed: m.routed };
            if (m.inFlightRounds > 0)
              return node(m.name, undefined, { ...base, reachable: false, restartInFlight: true });
            const b = r.nodes[i]!;
            if (b === "dead") return node(m.name, undefined, { ...base, reachable: false });
            if (b === "nohead") return node(m.name, undefined, base);
            if (b === "zero") return node(m.name, 0, base);
            if (b === "syncing") return node(m.name, head, { ...base, syncing: true });
            if (b === "wrongchain") return node(m.name, head, { ...base, chainId: 5 });
            const lag = { sync: 0, behind1: 1, behind5: 5, behind40: 40 }[b]!;
            return node(m.name, head - lag, base);
          });
          const out: EngineOutput = evaluateNetwork({ now, network, peers, nodes: observations, previous });
          previous = out.state;

          const inFlight = observations.filter((o) => o.restartInFlight).length;
          const restarts = out.decisions.filter((d) => d.kind === "restart");
          expect(restarts.length).toBeLessThanOrEqual(
            Math.max(0, network.health.maxConcurrentRestarts - inFlight),
          );
          for (const [i, status] of out.nodes.entries()) {
            const obs = observations[i]!;
            if (out.systemic) expect(status.routed).toBe(obs.routed);
            else expect(status.routed).toBe(status.state === "Healthy");
            if (status.reason === "no-head") expect(status.lagBlocks).toBeUndefined();
            if (obs.restartInFlight) expect(status.state).toBe("Restarting");
            const changed = lastStates.get(status.name) !== status.state;
            const transitions = out.decisions.filter(
              (d) => d.kind === "transition" && d.node === status.name,
            );
            expect(transitions.length).toBe(changed ? 1 : 0);
          }
          for (const d of out.decisions) {
            const status = out.nodes.find((n) => n.name === d.node)!;
            if (d.kind === "restart") {
              expect(out.systemic).toBeUndefined();
              expect(status.state).toBe("Restarting");
              expect(observations.find((o) => o.name === d.node)!.restartInFlight).toBeFalsy();
            }
            if (d.kind === "route" || d.kind === "unroute") expect(out.systemic).toBeUndefined();
            if (d.kind === "route") expect(status.state).toBe("Healthy");
            if (d.kind === "unroute") expect(status.state).not.toBe("Healthy");
          }
          lastStates = new Map(out.nodes.map((n) => [n.name, n.state]));

          // The fleet carries out the decisions: routing at once, a restart over two rounds.
          for (const m of fleet) {
            if (m.inFlightRounds > 0 && --m.inFlightRounds === 0) m.startedAt = now;
          }
          for (const d of out.decisions) {
            const m = fleet.find((f) => f.name === d.node)!;
            if (d.kind === "route") m.routed = true;
            if (d.kind === "unroute") m.routed = false;
            if (d.kind === "restart") {
              m.inFlightRounds = 2;
              m.restarts.push({ at: now, reason: d.reason });
            }
          }
        }
      }),
      { numRuns: 150, seed: 20_261_122 },
    );
  });
});
