/** What the balancer knows of an upstream. */
export interface Candidate {
  name: string;
  routed: boolean;
  reachable: boolean;
  /** Latest block the node has; undefined before its first head. */
  head: number | undefined;
  outstanding: number;
}

/**
 * The upstreams to try for a request that needs block `minBlock` (undefined: any), best first. Only routed nodes,
 * unless none is routed (panic mode: then every reachable node, highest head first). Among equals, the fewest
 * outstanding requests wins; nodes known not to have the block come last, so a request still gets an answer.
 */
export function rankCandidates(
  nodes: readonly Candidate[],
  minBlock: number | undefined,
  exclude: ReadonlySet<string>,
): Candidate[] {
  const routed = nodes.filter((n) => n.routed && n.reachable);
  const pool = (routed.length > 0 ? routed : nodes.filter((n) => n.reachable)).filter(
    (n) => !exclude.has(n.name),
  );
  // `pool` is a new array (filter's), sorted in place; one node needs no sorting.
  if (pool.length < 2) return pool;
  return pool.sort((a, b) => {
    const blockOrder = Number(hasBlock(b, minBlock)) - Number(hasBlock(a, minBlock));
    if (blockOrder !== 0) return blockOrder;
    if (routed.length === 0 && a.head !== b.head) return (b.head ?? -1) - (a.head ?? -1);
    return a.outstanding - b.outstanding;
  });
}

/**
 * The node for one attempt: the best of the ranking, taking turns among nodes that rank equal (same block
 * availability and load), so an idle pool spreads calls over every node rather than sending all to the first.
 */
export function pickCandidate(
  ranked: readonly Candidate[],
  minBlock: number | undefined,
  turn: number,
): Candidate | undefined {
  const best = ranked[0];
  if (!best) return undefined;
  if (ranked.length === 1) return best;
  const bestHas = hasBlock(best, minBlock);
  const equal = ranked.filter(
    (n) => hasBlock(n, minBlock) === bestHas && n.outstanding === best.outstanding && n.head === best.head,
  );
  const ties =
    equal.length > 1
      ? equal
      : ranked.filter((n) => hasBlock(n, minBlock) === bestHas && n.outstanding === best.outstanding);
  return ties[turn % ties.length];
}

/** Whether the node is known to have block `minBlock` (any node does when undefined). */
export function hasBlock(n: Candidate, minBlock: number | undefined): boolean {
  return minBlock === undefined || (n.head !== undefined && n.head >= minBlock);
}

/** Panic mode: no routed node is reachable, so the gateway serves from whatever answers. */
export function inPanic(nodes: readonly Candidate[]): boolean {
  return !nodes.some((n) => n.routed && n.reachable);
}
