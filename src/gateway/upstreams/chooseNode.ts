import type { Candidate } from "./balancer.js";
import { hasBlock, pickCandidate, rankCandidates } from "./balancer.js";

export interface ChooseNodeInput {
  candidates: readonly Candidate[];
  /** The block the answering node should have. */
  minBlock: number | undefined;
  /**
   * The call names `minBlock` (a number, a pinned tag, a hash, a log range): a node below it is never asked, since
   * it can only answer for a block it does not have. Otherwise a node below is only ranked last.
   */
  requireBlock?: boolean;
  /** Nodes this call was sent to already (never again). */
  tried: ReadonlySet<string>;
  /**
   * Nodes hung or just failed: never for a hedge or a move off a hung node; for an attempt with nothing else in
   * flight, only when no other is left.
   */
  avoid: ReadonlySet<string>;
  /**
   * The call has no attempt in flight: its first, or a retry after its only attempt failed. Without this one it gets
   * no answer, so a node passed over is better than none.
   */
  nothingInFlight: boolean;
  /** For a call by block hash: the nodes whose chain holds the block, preferred when any is left. */
  holders?: ReadonlySet<string> | undefined;
  /** Rotates among equally good nodes. */
  turn: number;
}

/**
 * The node for the next attempt of one call: the best routed node (see rankCandidates) that the call has not tried,
 * none that is hung or just failed (an attempt with nothing else in flight takes one when no other is left: a node
 * that dies while the others are busy must not turn its reads into errors), and, for a call by block hash, those
 * holding the block. None when the call requires a block no node it may ask has.
 */
export function chooseNode(input: ChooseNodeInput): Candidate | undefined {
  const { candidates, minBlock, tried, avoid } = input;
  const rank = (exclude: ReadonlySet<string>) => {
    const ranked = rankCandidates(candidates, minBlock, exclude);
    return input.requireBlock ? ranked.filter((c) => hasBlock(c, minBlock)) : ranked;
  };
  let ranked = rank(avoid.size > 0 ? new Set([...tried, ...avoid]) : tried);
  // An attempt the call depends on is better sent to a node passed over than not at all; a second one in flight is
  // not (the first may still answer).
  if (ranked.length === 0 && avoid.size > 0 && input.nothingInFlight) ranked = rank(tried);
  if (input.holders) {
    const holding = ranked.filter((c) => input.holders!.has(c.name));
    if (holding.length > 0) ranked = holding;
  }
  return pickCandidate(ranked, minBlock, input.turn);
}
