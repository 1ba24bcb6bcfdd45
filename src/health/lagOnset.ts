import type { ReferenceHead } from "./types.js";

/**
 * A new block reaches the reserved peers a moment before it reaches a light node, and the controller runs a round on
 * every new block: a node held exactly at maxLagBlocks is one block over the threshold in that moment only. So blocks
 * the reference gained within the delivery allowance do not yet count towards the unroute threshold; a node still
 * over it once the allowance has passed is over it for real. The allowance is half a block time: a node truly over the
 * threshold then counts half a block after the block that put it over, and leaves routing a probe later, within one
 * block plus one probe; a node at the threshold may take up to half a block (a loaded machine) to get its block.
 */
export function deliveryAllowanceMs(blockTimeMs: number): number {
  return blockTimeMs / 2;
}

export interface DeliveryWindow {
  /** Blocks at the top of the reference that may still be on their way to the light nodes. */
  blocks: number;
  /** When they count (the reference's adoption plus the allowance). */
  until: number;
}

/**
 * The blocks the reference gained from `priorNumber` (the reference before it) within the allowance, as many as can
 * arrive in that time; none on a first sight (nothing says they are recent) or once the allowance has passed.
 */
export function deliveryWindow(
  reference: ReferenceHead | undefined,
  priorNumber: number | undefined,
  now: number,
  allowanceMs: number,
  blockTimeMs: number,
): DeliveryWindow | undefined {
  if (reference === undefined || priorNumber === undefined) return undefined;
  const until = reference.seenAt + allowanceMs;
  if (now >= until) return undefined;
  const blocks = Math.min(reference.number - priorNumber, Math.ceil(allowanceMs / blockTimeMs));
  return blocks > 0 ? { blocks, until } : undefined;
}

/** The reference before the current one: the previous round's, when the current one is higher; else as it was. */
export function priorReference(
  previous: ReferenceHead | undefined,
  current: ReferenceHead | undefined,
  prior: number | undefined,
): number | undefined {
  if (previous !== undefined && current !== undefined && current.number > previous.number)
    return previous.number;
  return prior;
}
