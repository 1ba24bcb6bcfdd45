import { peerHashAt } from "../../health/referenceHead.js";
import type { PeerObservation } from "../../health/types.js";
import type { BlockRef } from "../../chain/blockRef.js";

/** Peers (or, when the peers do not have the height yet, routed nodes) that must have a block before it is served. */
export const HEAD_QUORUM = 2;

export interface HeadAgreement {
  /** The highest block the gateway may serve; undefined when none is agreed. */
  head?: BlockRef;
  /** The voting nodes that have it. */
  supporters: string[];
  /** Nodes with another block than the peers' or the agreed chain's at some height: they get no calls. */
  dissenters: ReadonlySet<string>;
}

const NONE: HeadAgreement = { supporters: [], dissenters: new Set() };

/**
 * What the gateway may serve: the highest head of a voting node (the routed ones) that the reserved peers agree on
 * by hash, or, when no peer has that height yet, that min(quorum, nodes) voting nodes have. A node announcing a block
 * of its own (a fork) is therefore never served, and it is a dissenter from the moment the peers, or the other nodes,
 * have another block at a height it has. `nodes` and `peers` must be usable (reachable, right chain, with a head).
 */
export function agreeOnHead(
  nodes: readonly PeerObservation[],
  peers: readonly PeerObservation[],
  quorum = HEAD_QUORUM,
): HeadAgreement {
  if (nodes.length === 0) return NONE;
  const need = Math.min(quorum, nodes.length);
  const tried = new Set<string>();
  // Candidates highest first; each (height, hash) is counted once, so this stays linear in voters per candidate.
  const byHeight = [...nodes].sort((a, b) => b.head!.number - a.head!.number);
  for (const candidate of byHeight) {
    const head = candidate.head!;
    if (tried.has(head.hash)) continue;
    tried.add(head.hash);
    const verdict = peersVerdict(peers, head.number, head.hash, quorum);
    if (verdict === false) continue;
    const supporters: string[] = [];
    for (const n of nodes) if (peerHashAt(n, head.number) === head.hash) supporters.push(n.name);
    if (verdict === true || supporters.length >= need) {
      return { head, supporters, dissenters: dissentersOf(nodes, peers, head, candidate, quorum) };
    }
  }
  return { supporters: [], dissenters: dissentersOf(nodes, peers, undefined, undefined, quorum) };
}

/**
 * Whether the peers that know a height say it has this hash: true when min(quorum, those peers) of them have it,
 * false when as many have another; undefined when no peer knows the height (they are behind it) or they are split.
 */
function peersVerdict(
  peers: readonly PeerObservation[],
  height: number,
  hash: string,
  quorum: number,
): boolean | undefined {
  let knowing = 0;
  let same = 0;
  for (const p of peers) {
    const theirs = peerHashAt(p, height);
    if (theirs === undefined) continue;
    knowing++;
    if (theirs === hash) same++;
  }
  const need = Math.min(quorum, knowing);
  if (knowing > 0 && same >= need) return true;
  if (knowing > 0 && knowing - same >= need) return false;
  return undefined;
}

/** Nodes whose head the peers have another block for, or whose block at an agreed height is not the agreed one. */
function dissentersOf(
  nodes: readonly PeerObservation[],
  peers: readonly PeerObservation[],
  agreed: BlockRef | undefined,
  supporter: PeerObservation | undefined,
  quorum: number,
): Set<string> {
  const dissenters = new Set<string>();
  for (const n of nodes) {
    const head = n.head!;
    if (peersVerdict(peers, head.number, head.hash, quorum) === false) {
      dissenters.add(n.name);
      continue;
    }
    if (!agreed || !supporter) continue;
    const mine = peerHashAt(n, agreed.number);
    if (mine !== undefined) {
      if (mine !== agreed.hash) dissenters.add(n.name);
    } else if (head.number < agreed.number) {
      const expected = peerHashAt(supporter, head.number);
      if (expected !== undefined && expected !== head.hash) dissenters.add(n.name);
    }
  }
  return dissenters;
}
