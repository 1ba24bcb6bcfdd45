import { DevnetInputError } from "./errors.js";
import type { SlowProfileName } from "./latencyProfile.js";
import { SLOW_PROFILE_NAMES } from "./latencyProfile.js";

/** Faults the devnet injects into one node, and the pure rules of what each means for the block driver. */

/**
 * `slow` delays the node's state reads (see latencyProfile.ts) in the devnet's front of the node; `seed` makes the
 * delays repeatable (tests), else they differ on every application.
 */
export type Fault =
  | { kind: "lag"; blocks: number }
  | { kind: "slow"; profile: SlowProfileName; seed?: number }
  | { kind: "stall" | "fork" | "kill" | "heal" };
export type FaultKind = Fault["kind"];

export const FAULT_KINDS: readonly FaultKind[] = ["lag", "slow", "stall", "fork", "kill", "heal"];

/** The fault a node carries now ("heal" clears it, so it is never active). */
export type ActiveFault = Exclude<Fault, { kind: "heal" }>;

/** Largest lag accepted: far beyond any restart threshold, small enough to stay a plain number. */
export const MAX_LAG_BLOCKS = 1_000_000;

/** Validates an untrusted fault description (a JSON body, CLI arguments). */
export function parseFault(input: unknown): Fault {
  if (!input || typeof input !== "object" || Array.isArray(input)) {
    throw new DevnetInputError('expected a JSON object such as {"kind": "lag", "blocks": 5}');
  }
  const { kind, blocks, profile, seed } = input as {
    kind?: unknown;
    blocks?: unknown;
    profile?: unknown;
    seed?: unknown;
  };
  if (typeof kind !== "string" || !(FAULT_KINDS as readonly string[]).includes(kind)) {
    throw new DevnetInputError(`kind must be one of ${FAULT_KINDS.join(", ")} (got ${JSON.stringify(kind)})`);
  }
  if (kind === "lag") {
    const n = typeof blocks === "string" && /^\d+$/.test(blocks) ? Number(blocks) : blocks;
    if (typeof n !== "number" || !Number.isInteger(n) || n < 1 || n > MAX_LAG_BLOCKS) {
      throw new DevnetInputError(
        `lag needs blocks, a whole number from 1 to ${MAX_LAG_BLOCKS} (got ${JSON.stringify(blocks)})`,
      );
    }
    return { kind, blocks: n };
  }
  if (blocks !== undefined) throw new DevnetInputError(`blocks applies to lag only, not ${kind}`);
  if (kind === "slow") return parseSlow(profile, seed);
  if (profile !== undefined || seed !== undefined)
    throw new DevnetInputError(`profile and seed apply to slow only, not ${kind}`);
  return { kind: kind as "stall" | "fork" | "kill" | "heal" };
}

function parseSlow(profile: unknown, seed: unknown): Fault {
  const name = profile ?? "light";
  if (typeof name !== "string" || !(SLOW_PROFILE_NAMES as readonly string[]).includes(name)) {
    throw new DevnetInputError(
      `slow profile must be one of ${SLOW_PROFILE_NAMES.join(", ")} (got ${JSON.stringify(profile)})`,
    );
  }
  if (seed === undefined) return { kind: "slow", profile: name as SlowProfileName };
  const n = typeof seed === "string" && /^\d+$/.test(seed) ? Number(seed) : seed;
  if (typeof n !== "number" || !Number.isInteger(n) || n < 0 || n > 0xffffffff) {
    throw new DevnetInputError(
      `slow seed must be a whole number from 0 to 4294967295 (got ${JSON.stringify(seed)})`,
    );
  }
  return { kind: "slow", profile: name as SlowProfileName, seed: n };
}

/**
 * The height the driver mines a node up to, given the network head, or undefined when it mines nothing on it
 * (stalled or killed). A lagging node receives nothing until it is `blocks` behind, then follows at that distance.
 */
export function targetHeight(fault: ActiveFault | undefined, head: number): number | undefined {
  if (!fault || fault.kind === "fork" || fault.kind === "slow") return head;
  if (fault.kind === "lag") return Math.max(0, head - fault.blocks);
  return undefined;
}

/** Whether a full node with this fault still produces blocks: a network whose full nodes all stop halts. */
export function fullNodeProduces(fault: ActiveFault | undefined): boolean {
  return fault?.kind !== "stall" && fault?.kind !== "kill";
}

export function describeFault(fault: Fault | null | undefined): string {
  if (!fault) return "none";
  if (fault.kind === "lag") return `lag ${fault.blocks}`;
  if (fault.kind === "slow")
    return `slow ${fault.profile}${fault.seed !== undefined ? ` seed ${fault.seed}` : ""}`;
  return fault.kind;
}
