import type { Candidate } from "./balancer.js";
import { pickCandidate, rankCandidates } from "./balancer.js";

export interface ChooseNodeInput {
  candidates: readonly Candidate[];
  /** The block the answering node must have. */
  minBlock: number | undefined;
  /** Nodes this call was sent to already (never again). */
  tried: ReadonlySet<string>;
  /** Nodes hung or just failed: never for a retry or hedge; for a call's first attempt, only when no other is left. */
  avoid: ReadonlySet<string>;
  /** The call's first attempt (rather than a retry or hedge). */
  first: boolean;
  /** For a call by block hash: the nodes whose chain holds the block, preferred when any is left. */
  holders?: ReadonlySet<string> | undefined;
  /** Rotates among equally good nodes. */
  turn: number;
}

/**
 * The node for the next attempt of one call: the best routed node (see rankCandidates) that the call has not tried,
 * and for a retry or hedge none that is hung or just failed (a first attempt takes one only when nothing else is
 * left), and, for a call by block hash, those holding the block.
 */
export function chooseNode(input: ChooseNodeInput): Candidate | undefined {
  const { candidates, minBlock, tried, avoid } = input;
  let ranked = rankCandidates(candidates, minBlock, avoid.size > 0 ? new Set([...tried, ...avoid]) : tried);
  // A first attempt is better sent to a node passed over than not at all; a retry or hedge is not.
  if (ranked.length === 0 && avoid.size > 0 && input.first)
    ranked = rankCandidates(candidates, minBlock, tried);
  if (input.holders) {
    const holding = ranked.filter((c) => input.holders!.has(c.name));
    if (holding.length > 0) ranked = holding;
  }
  return pickCandidate(ranked, minBlock, input.turn);
}
