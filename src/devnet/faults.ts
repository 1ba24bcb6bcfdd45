import { DevnetInputError } from "./errors.js";

/** Faults the devnet injects into one node, and the pure rules of what each means for the block driver. */

export type Fault = { kind: "lag"; blocks: number } | { kind: "stall" | "fork" | "kill" | "heal" };
export type FaultKind = Fault["kind"];

export const FAULT_KINDS: readonly FaultKind[] = ["lag", "stall", "fork", "kill", "heal"];

/** The fault a node carries now ("heal" clears it, so it is never active). */
export type ActiveFault = Exclude<Fault, { kind: "heal" }>;

/** Largest lag accepted: far beyond any restart threshold, small enough to stay a plain number. */
export const MAX_LAG_BLOCKS = 1_000_000;

/** Validates an untrusted fault description (a JSON body, CLI arguments). */
export function parseFault(input: unknown): Fault {
  if (!input || typeof input !== "object" || Array.isArray(input)) {
    throw new DevnetInputError('expected a JSON object such as {"kind": "lag", "blocks": 5}');
  }
  const { kind, blocks } = input as { kind?: unknown; blocks?: unknown };
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
  return { kind: kind as "stall" | "fork" | "kill" | "heal" };
}

/**
 * The height the driver mines a node up to, given the network head, or undefined when it mines nothing on it
 * (stalled or killed). A lagging node receives nothing until it is `blocks` behind, then follows at that distance.
 */
export function targetHeight(fault: ActiveFault | undefined, head: number): number | undefined {
  if (!fault || fault.kind === "fork") return head;
  if (fault.kind === "lag") return Math.max(0, head - fault.blocks);
  return undefined;
}

/** Whether a full node with this fault still produces blocks: a network whose full nodes all stop halts. */
export function fullNodeProduces(fault: ActiveFault | undefined): boolean {
  return fault?.kind !== "stall" && fault?.kind !== "kill";
}

export function describeFault(fault: Fault | null | undefined): string {
  if (!fault) return "none";
  return fault.kind === "lag" ? `lag ${fault.blocks}` : fault.kind;
}
