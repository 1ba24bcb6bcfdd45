import type { BlockRef } from "./types.js";

export interface HeadProgress {
  headNumber?: number;
  /** The stall clock runs from here; it restarts whenever the head moves or the node is not behind. */
  stallClockFrom: number;
}

/**
 * Tracks whether a node's head climbs while the reference does. A node sitting at the reference (the peers are not
 * advancing either) is never stalled; the clock only runs while the node is behind and its head stays put.
 */
export function trackHeadProgress(
  previous: HeadProgress | undefined,
  head: BlockRef | undefined,
  referenceNumber: number | undefined,
  now: number,
): HeadProgress {
  if (head === undefined) {
    return { headNumber: previous?.headNumber, stallClockFrom: previous?.stallClockFrom ?? now };
  }
  const moved = previous?.headNumber !== head.number;
  const behind = referenceNumber !== undefined && referenceNumber > head.number;
  if (moved || !behind || previous === undefined) return { headNumber: head.number, stallClockFrom: now };
  return { headNumber: head.number, stallClockFrom: previous.stallClockFrom };
}

export function isStalled(progress: HeadProgress, now: number, stallAfter: number): boolean {
  return progress.headNumber !== undefined && now - progress.stallClockFrom >= stallAfter;
}
