import { describe, expect, it } from "vitest";
import { restartsOf, routedFleets, statusIn } from "../support/devnetFleet.js";
import { waitFor } from "../support/waitFor.js";

/**
 * The cases that need more than one fault at once, on a real devnet: a reserved peer killed and healed while a light
 * node is stalled, and two of three light nodes broken while the peers agree and the third keeps up.
 */
const BLOCK_MS = 500;
const HEALTH = {
  probeInterval: "200ms",
  maxLagBlocks: 3,
  unhealthyAfter: 2,
  healthyAfter: 2,
  stallAfter: "1500ms",
  restartAfter: "2s",
  restartBackoffBase: "2s",
  startupGrace: "20s",
};

const healthyFleet = routedFleets({ blockTimeMs: BLOCK_MS, health: HEALTH });
/** Above the sum of each case's own deadlines: on a loaded machine a case runs to its deadlines, not vitest's. */
const CASE_TIMEOUT_MS = 120_000;

describe("health decisions on a real devnet when several things break", () => {
  it(
    "a full node killed and healed never pulls the reference back, and a stalled light node is still seen Lagging",
    async () => {
      // Restarts are out of the picture: the stalled node must be seen, and stay seen, as Lagging.
      // A chain of some length for the respawned full node to replay: 150 blocks with a transaction each (replayed one
      // by one), mined on the full nodes before the fleet starts. 600 empty blocks mined one call at a time under the
      // running fleet took 115 s of a loaded machine, nearly the whole case, and replay in a few calls anyway. (The
      // heal resolves once the node is replayed; the controller was not seen to catch it below the reference in the
      // runs so far: the engine's peer-rejoin tests cover a peer back low.)
      const f = await healthyFleet({ restartAfter: "10m", restartLagBlocks: 1_000, stallAfter: "10m" }, 150);
      const stalled = "devnet-light-2";
      await f.devnet.fault(stalled, { kind: "stall" });
      await waitFor(() => !f.routed().includes(stalled), { what: `${stalled} unrouted`, timeoutMs: 10_000 });
      const from = f.outputs.length;
      await f.devnet.fault("devnet-full-0", { kind: "kill" });
      // Down for ten blocks, then respawned and replayed from its genesis by the devnet.
      const downAt = f.devnet.head("devnet").number;
      await waitFor(() => f.devnet.head("devnet").number >= downAt + 10, {
        what: "ten blocks",
        timeoutMs: 15_000,
      });
      await f.devnet.fault("devnet-full-0", { kind: "heal" });
      const healedAt = f.outputs.length;
      await waitFor(() => f.outputs.length >= healedAt + 40, {
        what: "forty rounds after the heal",
        timeoutMs: 20_000,
      });
      const rounds = f.outputs.slice(from);
      const references = rounds.map((o) => o.reference?.number ?? 0);
      for (let i = 1; i < references.length; i++)
        expect(references[i]).toBeGreaterThanOrEqual(references[i - 1]!);
      expect(rounds.filter((o) => o.systemic).map((o) => o.systemic!.message)).toEqual([]);
      expect(rounds.filter((o) => o.ignoredReference)).toEqual([]);
      for (const o of rounds) expect(statusIn(o, stalled)).toMatchObject({ state: "Lagging", routed: false });
      expect(statusIn(rounds.at(-1)!, stalled)!.lagBlocks).toBeGreaterThan(10);
      expect(f.routed().sort()).toEqual(["devnet-light-0", "devnet-light-1"]);
    },
    CASE_TIMEOUT_MS,
  );

  it(
    "two of three light nodes killed (kill -9) while the third keeps up: out of routing at once, restarted one at a time",
    async () => {
      const f = await healthyFleet();
      const from = f.outputs.length;
      await f.devnet.fault("devnet-light-0", { kind: "kill" });
      await f.devnet.fault("devnet-light-1", { kind: "kill" });
      const killedAt = f.outputs.length;
      await waitFor(() => f.routed().length === 1, { what: "both dead nodes unrouted", timeoutMs: 30_000 });
      // At once: in the rounds unhealthyAfter asks for, and the one under way at the kill, counted in rounds rather
      // than seconds (a loaded machine runs its rounds late, and the decision must not depend on that).
      const unroutedIn = f.outputs
        .slice(killedAt)
        .findIndex((o) =>
          ["devnet-light-0", "devnet-light-1"].every((n) => statusIn(o, n)?.routed === false),
        );
      expect(unroutedIn).toBeGreaterThanOrEqual(0);
      expect(unroutedIn + 1).toBeLessThanOrEqual(HEALTH.unhealthyAfter + 1);
      await waitFor(
        () => restartsOf(f, "devnet-light-0").length + restartsOf(f, "devnet-light-1").length >= 2,
        {
          what: "both restarted",
          timeoutMs: 30_000,
        },
      );
      await waitFor(() => f.routed().length === 3, { what: "all three routed again", timeoutMs: 30_000 });
      const rounds = f.outputs.slice(from);
      expect(rounds.filter((o) => o.systemic).map((o) => o.systemic!.cause)).toEqual([]);
      const restarts = rounds.flatMap((o) => o.decisions.filter((d) => d.kind === "restart"));
      expect(restarts.map((d) => d.node).sort()).toEqual(["devnet-light-0", "devnet-light-1"]);
      // One at a time: never both restart decisions in one round.
      expect(rounds.every((o) => o.decisions.filter((d) => d.kind === "restart").length <= 1)).toBe(true);
    },
    CASE_TIMEOUT_MS,
  );

  it(
    "two of three light nodes stalled while the third keeps up: Lagging, unrouted and restarted",
    async () => {
      const f = await healthyFleet();
      const from = f.outputs.length;
      await f.devnet.fault("devnet-light-0", { kind: "stall" });
      await f.devnet.fault("devnet-light-1", { kind: "stall" });
      await waitFor(() => f.routed().length === 1, {
        what: "both stalled nodes unrouted",
        timeoutMs: 10_000,
      });
      await waitFor(() => f.routed().length === 3, {
        what: "both restarted and routed again",
        timeoutMs: 40_000,
      });
      const rounds = f.outputs.slice(from);
      expect(rounds.filter((o) => o.systemic).map((o) => o.systemic!.cause)).toEqual([]);
      expect(restartsOf(f, "devnet-light-0").map((r) => r.reason)).toEqual(["stall"]);
      expect(restartsOf(f, "devnet-light-1").map((r) => r.reason)).toEqual(["stall"]);
    },
    CASE_TIMEOUT_MS,
  );
});
