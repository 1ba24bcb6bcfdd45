import type { ResolvedHealthConfig } from "../config/sections/network.js";
import { isStalled } from "./headProgress.js";
import type { DeliveryWindow } from "./lagOnset.js";
import type { ConditionKind, NodeObservation, ReferenceHead, RestartReason } from "./types.js";

/**
 * Two tiers: `unroute` only takes a node out of routing; `restart` makes it a restart candidate once it lasts.
 * `none` is a round without evidence (a probe still outstanding): the node's state, streaks and restart clock carry over.
 */
export type Tier = "ok" | "unroute" | "restart" | "none";

export interface NodeCondition {
  kind: ConditionKind;
  tier: Tier;
  message: string;
  restartReason?: RestartReason;
  /** Leaves Healthy on this one probe, without waiting for `unhealthyAfter` (a forked head must not be served). */
  atOnce?: boolean;
  lagBlocks?: number;
  lagSeconds?: number;
  /** Over the lag threshold for less than the delivery allowance: the engine would judge it again at this time. */
  recheckAt?: number;
}

export interface ConditionContext {
  chainId: number;
  health: ResolvedHealthConfig;
  reference: ReferenceHead | undefined;
  /** The reference peers' hash at a height (their head's or a recent one), for the divergence checks. */
  peersHashAt: (height: number) => string | undefined;
  now: number;
  /** How long a node may leave a probe unanswered before its silence counts (silenceLimitMs). */
  silenceLimit: number;
  /** Blocks at the top of the reference that may still be on their way to the nodes (lagOnset.deliveryWindow). */
  delivery?: DeliveryWindow;
  blockTimeMs: number;
}

/** Kinds that a node catching up after a (re)start is expected to show; the startup grace masks them. */
export const CATCHING_UP_KINDS: ReadonlySet<ConditionKind> = new Set([
  "no-head",
  "height-zero",
  "lag",
  "stall",
  "syncing",
]);

/**
 * What this round's probe says of a node, the most serious problem first. `inStep`: the node has answered in step with
 * the reference in this incarnation (so a head at height 0 is genesis it synced to, not a sync that never began).
 */
export function assessNode(
  node: NodeObservation,
  stallClockFrom: number,
  ctx: ConditionContext,
  inStep = false,
): NodeCondition {
  const { health, reference } = ctx;
  if (!node.reachable) {
    return {
      kind: "unresponsive",
      tier: "restart",
      restartReason: "unresponsive",
      message: `probe failed: ${node.error ?? "no answer"}`,
    };
  }
  if (node.chainId !== undefined && node.chainId !== ctx.chainId) {
    return {
      kind: "wrong-chain",
      tier: "restart",
      restartReason: "diverged",
      message: `chain id ${node.chainId}, expected ${ctx.chainId}`,
    };
  }
  const check = node.check;
  if (check && check.hash !== null && reference && check.number <= reference.number - health.settledDepth) {
    const expected = ctx.peersHashAt(check.number);
    if (expected !== undefined && expected !== check.hash) {
      return {
        kind: "hash-mismatch",
        tier: "restart",
        restartReason: "diverged",
        message: `block ${check.number} is ${check.hash}, the peers have ${expected}`,
      };
    }
  }
  const head = node.head;
  if (head !== undefined && reference && head.number <= reference.number) {
    // A head the peers have another block for: out of routing on this probe, before clients are served its blocks.
    const expected = head.number === reference.number ? reference.hash : ctx.peersHashAt(head.number);
    if (expected !== undefined && expected !== head.hash) {
      return {
        kind: "hash-mismatch",
        tier: "restart",
        restartReason: "diverged",
        atOnce: true,
        message: `head block ${head.number} is ${head.hash}, the peers have ${expected}`,
      };
    }
  }
  if (head === undefined) {
    return { kind: "no-head", tier: "restart", restartReason: "lag", message: "has never reported a head" };
  }
  // Height 0 means never synced, unless the chain itself has only a few blocks (then it is just behind: block 1 late),
  // or the node was in step at genesis: then it synced, and a head stuck there is a stall or a lag like any other.
  if (head.number === 0 && !inStep && (reference === undefined || reference.number > health.maxLagBlocks)) {
    const lagBlocks = reference?.number;
    return {
      kind: "height-zero",
      tier: "restart",
      restartReason: "lag",
      message: "reports height 0",
      lagBlocks,
    };
  }
  const syncing = node.syncing === true && health.syncingIsUnhealthy;
  if (!reference) {
    // Without a reference (a systemic condition) lag cannot be judged.
    return syncing
      ? syncingCondition()
      : { kind: "ok", tier: "ok", message: `head ${head.number}, no reference` };
  }
  // Lag against the reference; a node ahead of it (it saw a block first) is not behind.
  const lagBlocks = Math.max(0, reference.number - head.number);
  const lagSeconds = Math.max(0, reference.timestamp - head.timestamp);
  if (lagBlocks >= health.restartLagBlocks) {
    return {
      kind: "lag",
      tier: "restart",
      restartReason: "lag",
      message: lagText(lagBlocks, lagSeconds, reference.number),
      lagBlocks,
      lagSeconds,
    };
  }
  if (reference.number > head.number && isStalled(stallClockFrom, ctx.now, health.stallAfter)) {
    const stuck = Math.round((ctx.now - stallClockFrom) / 1000);
    return {
      kind: "stall",
      tier: "restart",
      restartReason: "stall",
      message: `head ${head.number} has not climbed for ${stuck} s while the peers' did; ${lagText(lagBlocks, lagSeconds, reference.number)}`,
      lagBlocks,
      lagSeconds,
    };
  }
  if (syncing) return { kind: "syncing", tier: "unroute", message: SYNCING_MESSAGE, lagBlocks, lagSeconds };
  if (lagBlocks > health.maxLagBlocks || lagSeconds * 1000 > health.maxLagSeconds) {
    const delivery = ctx.delivery;
    if (
      delivery !== undefined &&
      lagBlocks - delivery.blocks <= health.maxLagBlocks &&
      lagSeconds * 1000 - delivery.blocks * ctx.blockTimeMs <= health.maxLagSeconds
    ) {
      // Over only by the blocks that just arrived: they may be on their way to the node. No evidence either way yet.
      return {
        kind: "lag",
        tier: "none",
        message: `${lagText(lagBlocks, lagSeconds, reference.number)}, by blocks still within their delivery`,
        lagBlocks,
        lagSeconds,
        recheckAt: delivery.until,
      };
    }
    return {
      kind: "lag",
      tier: "unroute",
      message: lagText(lagBlocks, lagSeconds, reference.number),
      lagBlocks,
      lagSeconds,
    };
  }
  if (lagBlocks === 0 && lagSeconds === 0) return IN_SYNC;
  return { kind: "ok", tier: "ok", message: WITHIN_LIMITS, lagBlocks, lagSeconds };
}

/** How long a node may leave a probe unanswered before its silence counts: one block time plus one probe interval. */
export function silenceLimitMs(
  blockTimeMs: number,
  health: Pick<ResolvedHealthConfig, "probeInterval">,
): number {
  return blockTimeMs + health.probeInterval;
}

/**
 * A round without an answer from the node (its probe still outstanding), judged by how long it has been silent.
 *
 * A node in order answers every probe, and a new block comes within a block time: so a node that has not answered
 * for one block time plus one probe interval, while the peers moved past the last head it reported, is missing a
 * block it should be serving. That is evidence enough to take it out of routing at once (`atOnce`), without waiting
 * for `unhealthyAfter` probe timeouts: unrouting is cheap and undone by `healthyAfter` good probes. A restart still
 * needs the restart tier to last `restartAfter`, under the usual budget. A node whose answers take up to a block is
 * never silent that long, so it is not unrouted by this; one slower than that serves heads a block old anyway.
 *
 * Shorter silences, and any silence while the peers stand still (a halt: the node has missed nothing), say nothing
 * of the node: `awaiting`, and the probe's own timeout decides as before.
 */
export function assessUnanswered(
  unansweredSince: number,
  lastHead: number | undefined,
  ctx: ConditionContext,
): NodeCondition {
  const silentMs = ctx.now - unansweredSince;
  const reference = ctx.reference;
  const peersMovedOn = reference !== undefined && (lastHead === undefined || reference.number > lastHead);
  if (silentMs >= ctx.silenceLimit && peersMovedOn) {
    return {
      kind: "unresponsive",
      tier: "restart",
      restartReason: "unresponsive",
      atOnce: true,
      message: `no answer for ${seconds(silentMs)} s while the peers reached block ${reference.number}`,
    };
  }
  return {
    kind: "awaiting",
    tier: "none",
    message: `probe outstanding, no answer for ${seconds(silentMs)} s`,
  };
}

function seconds(ms: number): string {
  return String(Math.round(ms / 10) / 100);
}

// Built only for the cases that need it: assessNode runs for every node every round.
function lagText(blocks: number, seconds: number, reference: number): string {
  return `${blocks} blocks (${seconds} s) behind reference ${reference}`;
}

/** The common case, shared rather than allocated for every node every round. */
const IN_SYNC: NodeCondition = Object.freeze({
  kind: "ok",
  tier: "ok",
  message: "in sync",
  lagBlocks: 0,
  lagSeconds: 0,
});

/** The figures are in the status already; a constant spares building a string for most nodes every round. */
const WITHIN_LIMITS = "behind within the lag thresholds";

const SYNCING_MESSAGE = "eth_syncing reports the node is syncing";

function syncingCondition(): NodeCondition {
  return { kind: "syncing", tier: "unroute", message: SYNCING_MESSAGE };
}
