import { z } from "zod";
import { duration } from "../duration.js";

/**
 * Health parameters of one pool. Defaults are DESIGN.md's; every one can be overridden per network.
 * Durations are milliseconds once parsed.
 */
export const healthSchema = z.strictObject({
  /** Probe period besides the head subscriptions. */
  probeInterval: duration.default(2_000),
  /**
   * Timeout of one probe call. Rounds do not wait for it: a node silent for blockTime + probeInterval while the peers
   * moved on leaves routing before its probe times out.
   */
  probeTimeout: duration.default(1_500),
  /** Lag in blocks that takes a node out of routing. */
  maxLagBlocks: z.number().int().min(1).default(3),
  /** Lag in seconds that takes a node out of routing; defaults to maxLagBlocks block intervals. */
  maxLagSeconds: duration.optional(),
  /** Lag in blocks that makes a node a restart candidate. */
  restartLagBlocks: z.number().int().min(1).default(32),
  /**
   * A head that has not climbed for this long while the peers' did is a stall (restart candidate). Defaults to 2 minutes,
   * or three block intervals on a slower chain.
   */
  stallAfter: duration.optional(),
  /** Consecutive bad probes before a Healthy node leaves routing. */
  unhealthyAfter: z.number().int().min(1).default(2),
  /** Consecutive good probes before a node returns to routing. */
  healthyAfter: z.number().int().min(1).default(3),
  /** How long a node stays bad (restart tier) before it is restarted. */
  restartAfter: duration.default(120_000),
  /** Time after a (re)start during which a node that is behind is Starting, not Lagging (longer while it closes the gap, up to 3x). */
  startupGrace: duration.default(600_000),
  /** Restarts in flight at once, per pool. */
  maxConcurrentRestarts: z.number().int().min(0).default(1),
  /** Restarts within crashLoopWindow that make a node CrashLoop. */
  crashLoopAfter: z.number().int().min(1).default(5),
  crashLoopWindow: duration.default(3_600_000),
  /** Per-node restart backoff: doubles from base up to max. */
  restartBackoffBase: duration.default(30_000),
  restartBackoffMax: duration.default(600_000),
  /** Reserved peers that must agree on a block hash for it to become the reference head. */
  peerQuorum: z.number().int().min(1).default(2),
  /**
   * Blocks a new reference head may run ahead of what the elapsed time allows (two blocks per blockTime since the last
   * adopted reference) before it is ignored as implausible, e.g. a peer on another chain racing ahead.
   */
  referenceJumpSlack: z.number().int().min(0).default(8),
  /** Depth below the reference head at which block hashes are compared to detect divergence. */
  settledDepth: z.number().int().min(0).default(2),
  /** When true (default), a node reporting eth_syncing is not healthy. */
  syncingIsUnhealthy: z.boolean().default(true),
  /** Fraction of a pool that turning bad at once is treated as systemic (no restarts). */
  systemicBadFraction: z.number().gt(0).max(1).default(0.5),
  /**
   * The longest a systemic failure holds restarts and routing (fail static); after it the nodes are judged on their
   * own again, restarted one at a time under the usual budget.
   */
  failStaticMaxHold: duration.default(300_000),
  /** Peers whose head has not advanced for this long are considered halted (systemic). Defaults to 10 block intervals. */
  peerHaltAfter: duration.optional(),
});

export type HealthConfig = z.infer<typeof healthSchema>;

/** Block timestamps are whole seconds: no threshold compared with them can be finer. */
export const TIMESTAMP_RESOLUTION_MS = 1_000;

/**
 * Time thresholds left out of the config, derived from the block time so they work on fast chains too:
 * `maxLagSeconds` is maxLagBlocks block intervals but never under the timestamp resolution (a node in sync reads up
 * to a second behind when a block crosses a second), `peerHaltAfter` is ten block intervals but at least three
 * probe intervals (a peer followed by polling is seen once per probe), and `stallAfter` is two minutes but at least
 * three block intervals.
 */
export function derivedTimeThresholds(
  health: HealthConfig,
  blockTimeMs: number,
): { maxLagSeconds: number; peerHaltAfter: number; stallAfter: number } {
  return {
    stallAfter: health.stallAfter ?? Math.max(120_000, 3 * blockTimeMs),
    maxLagSeconds:
      health.maxLagSeconds ?? Math.max(health.maxLagBlocks * blockTimeMs, TIMESTAMP_RESOLUTION_MS),
    peerHaltAfter: health.peerHaltAfter ?? Math.max(10 * blockTimeMs, 3 * health.probeInterval),
  };
}

/** Time thresholds given in a config that cannot work with the network's block time; each names its option. */
export function timeThresholdProblems(
  health: HealthConfig,
  blockTimeMs: number,
): Array<{ option: keyof HealthConfig; message: string }> {
  const problems: Array<{ option: keyof HealthConfig; message: string }> = [];
  const blockTime = formatMs(blockTimeMs);
  if (health.maxLagSeconds !== undefined && health.maxLagSeconds < TIMESTAMP_RESOLUTION_MS) {
    problems.push({
      option: "maxLagSeconds",
      message: `is ${formatMs(health.maxLagSeconds)}, under the one-second resolution of block timestamps: nodes in sync would flap out of routing; use 1s or more, or leave it out (default maxLagBlocks x blockTime, at least 1s)`,
    });
  }
  if (health.peerHaltAfter !== undefined && health.peerHaltAfter < 2 * blockTimeMs) {
    problems.push({
      option: "peerHaltAfter",
      message: `is ${formatMs(health.peerHaltAfter)}, within two block intervals (blockTime ${blockTime}): the ordinary wait for the next block would read as a network halt`,
    });
  }
  if (health.stallAfter !== undefined && health.stallAfter < 2 * blockTimeMs) {
    problems.push({
      option: "stallAfter",
      message: `is ${formatMs(health.stallAfter)}, within two block intervals (blockTime ${blockTime}): a node waiting for the next block would read as stalled`,
    });
  }
  return problems;
}

function formatMs(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000}s` : `${ms}ms`;
}
