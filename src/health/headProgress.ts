import type { BlockRef } from "../chain/blockRef.js";

/** What a node's memory keeps of its head between rounds. */
export interface HeadProgress {
  headNumber?: number;
  /** The stall clock runs from here; it restarts whenever the head moves or the node is not behind. */
  stallClockFrom: number;
}

/**
 * Tracks whether a node's head climbs while the reference does: returns when the stall clock started. A node
 * sitting at the reference (the peers are not advancing either) is never stalled; the clock only runs while the node
 * is behind and its head stays put. A probe without a head leaves the clock as it was.
 */
export function nextStallClock(
  previous: HeadProgress | undefined,
  head: BlockRef | undefined,
  referenceNumber: number | undefined,
  now: number,
): number {
  if (previous === undefined) return now;
  if (head === undefined) return previous.stallClockFrom;
  const moved = previous.headNumber !== head.number;
  const behind = referenceNumber !== undefined && referenceNumber > head.number;
  return moved || !behind ? now : previous.stallClockFrom;
}

export function isStalled(stallClockFrom: number, now: number, stallAfter: number): boolean {
  return now - stallClockFrom >= stallAfter;
}
