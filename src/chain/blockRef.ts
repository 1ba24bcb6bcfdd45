/**
 * The chain's own vocabulary, below every layer that speaks of blocks (rpc, health, probes, the fleet, the gateway):
 * a block as the head of a node or a peer names it.
 */
export interface BlockRef {
  number: number;
  hash: string;
  /** Block timestamp, seconds (as in the block header). */
  timestamp: number;
}
