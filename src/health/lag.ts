import type { BlockRef } from "./types.js";

export interface Lag {
  blocks: number;
  /** Reference block timestamp minus the node's head timestamp. */
  seconds: number;
}

/** Lag behind the reference; a node ahead of it (it saw a block first) counts as not behind. */
export function computeLag(reference: BlockRef, head: BlockRef): Lag {
  return {
    blocks: Math.max(0, reference.number - head.number),
    seconds: Math.max(0, reference.timestamp - head.timestamp),
  };
}
