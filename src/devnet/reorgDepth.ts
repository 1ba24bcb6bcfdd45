import { DevnetInputError } from "./errors.js";

/** Deepest reorg accepted (far deeper than any real one). */
export const MAX_REORG_DEPTH = 64;

/** A reorg replaces 1 to min(height, MAX_REORG_DEPTH) blocks; anything else is refused saying what is allowed. */
export function checkReorgDepth(depth: number, height: number): void {
  const deepest = Math.min(height, MAX_REORG_DEPTH);
  if (!Number.isInteger(depth) || depth < 1 || depth > deepest) {
    throw new DevnetInputError(
      `reorg depth must be a whole number from 1 to ${deepest} (the head is ${height}; got ${JSON.stringify(depth)})`,
    );
  }
}
