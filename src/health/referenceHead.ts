import type { BlockRef } from "../chain/blockRef.js";
import type { PeerObservation } from "./types.js";

/** A head that enough reserved peers agree on, by hash. */
export interface AgreedHead {
  head: BlockRef;
  peers: string[];
}

/** Peers that count: reachable, with a head, and verified to be on the network's chain. */
export function eligiblePeers(peers: ReadonlyArray<PeerObservation>, chainId: number): PeerObservation[] {
  return peers.filter((p) => p.reachable && p.head !== undefined && p.chainId === chainId);
}

/** The hash a peer knows at a height: its head's, or one of its recent canonical hashes. */
export function peerHashAt(peer: PeerObservation, height: number): string | undefined {
  if (peer.head?.number === height) return peer.head.hash;
  return peer.recentHashes?.get(height);
}

/**
 * Every peer head that at least min(quorum, peers) of the given (eligible) peers agree on by hash, highest first.
 * With one peer that is its head; with several, one peer on a wrong fork or racing ahead is outvoted. Only heights
 * that are some peer's head are candidates, since the block's timestamp comes from that head.
 */
export function agreedHeads(peers: ReadonlyArray<PeerObservation>, quorum: number): AgreedHead[] {
  const need = Math.min(quorum, peers.length);
  const heights = [...new Set(peers.map((p) => p.head!.number))].sort((a, b) => b - a);
  const agreed: AgreedHead[] = [];
  for (const height of heights) {
    for (const headPeer of peers) {
      const head = headPeer.head!;
      if (head.number !== height) continue;
      if (agreed.some((a) => a.head.number === height && a.head.hash === head.hash)) continue;
      const supporters = peers.filter((p) => peerHashAt(p, height) === head.hash).map((p) => p.name);
      if (supporters.length >= need) agreed.push({ head, peers: supporters });
    }
  }
  return agreed;
}

/** The hash at a settled height as the reference's peers know it (divergence check); undefined when unknown. */
export function referenceHashAt(
  peers: ReadonlyArray<PeerObservation>,
  referencePeers: ReadonlyArray<string>,
  height: number,
): string | undefined {
  for (const peer of peers) {
    if (!referencePeers.includes(peer.name)) continue;
    const hash = peerHashAt(peer, height);
    if (hash !== undefined) return hash;
  }
  return undefined;
}
