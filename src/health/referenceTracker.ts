import { agreedHeads, eligiblePeers, type AgreedHead } from "./referenceHead.js";
import type { NetworkParams, PeerObservation, ReferenceHead, SystemicCause } from "./types.js";
import { isPlausibleAdvance } from "./velocityGate.js";

export interface ReferenceHistory {
  reference?: ReferenceHead;
  referenceAdvancedAt?: number;
  quorumAt?: number;
}

export interface ReferenceRound extends ReferenceHistory {
  /** A quorum head refused by the velocity gate. */
  ignored?: AgreedHead;
  /** A peer-side systemic problem: no restarts while it lasts. */
  problem?: {
    cause: Extract<SystemicCause, "no-peer-reachable" | "peers-disagree" | "peers-halted">;
    message: string;
  };
}

/** Peers may briefly disagree (one has the next block, the other not yet) before it counts as systemic. */
export function disagreementGraceMs(network: NetworkParams): number {
  return 2 * Math.max(network.blockTimeMs, network.health.probeInterval);
}

/**
 * One round of the reference head: pick the highest quorum head that passes the velocity gate, keep the previous
 * reference when there is none, and say when the peers themselves are the problem.
 */
export function trackReference(
  peers: ReadonlyArray<PeerObservation>,
  network: NetworkParams,
  previous: ReferenceHistory,
  now: number,
): ReferenceRound {
  const { health } = network;
  const eligible = eligiblePeers(peers, network.chainId);
  if (eligible.length === 0) {
    return {
      ...previous,
      problem: { cause: "no-peer-reachable", message: describeNoPeer(peers, network.chainId) },
    };
  }

  const agreed = agreedHeads(eligible, health.peerQuorum);
  if (agreed.length === 0) {
    const withinGrace =
      previous.quorumAt !== undefined && now - previous.quorumAt <= disagreementGraceMs(network);
    if (withinGrace) return withHalt({ ...previous }, health.peerHaltAfter, now);
    const heads = eligible.map((p) => `${p.name}@${p.head!.number}`).join(", ");
    return {
      ...previous,
      problem: {
        cause: "peers-disagree",
        message: `no ${Math.min(health.peerQuorum, eligible.length)} reserved peers agree on a head by hash (${heads})`,
      },
    };
  }

  const gate = { blockTimeMs: network.blockTimeMs, slackBlocks: health.referenceJumpSlack };
  const chosen = agreed.find((a) => isPlausibleAdvance(previous.reference, a.head.number, now, gate));
  const ignored = chosen === agreed[0] ? undefined : agreed[0];
  if (!chosen) return withHalt({ ...previous, quorumAt: now, ignored }, health.peerHaltAfter, now);

  const prev = previous.reference;
  const sameHead = prev !== undefined && prev.number === chosen.head.number && prev.hash === chosen.head.hash;
  const reference: ReferenceHead = {
    ...chosen.head,
    seenAt: sameHead ? prev.seenAt : now,
    peers: chosen.peers,
  };
  let referenceAdvancedAt = previous.referenceAdvancedAt;
  if (prev === undefined || referenceAdvancedAt === undefined) {
    // First sight: the peers' own head times tell whether they have been stuck already.
    const seen = eligible
      .filter((p) => chosen.peers.includes(p.name) && p.headSeenAt !== undefined)
      .map((p) => p.headSeenAt!);
    referenceAdvancedAt = seen.length > 0 ? Math.min(now, Math.max(...seen)) : now;
  } else if (chosen.head.number > prev.number) {
    referenceAdvancedAt = now;
  }
  return withHalt({ reference, referenceAdvancedAt, quorumAt: now, ignored }, health.peerHaltAfter, now);
}

function withHalt(round: ReferenceRound, peerHaltAfter: number, now: number): ReferenceRound {
  const { reference, referenceAdvancedAt } = round;
  if (reference === undefined || referenceAdvancedAt === undefined) return round;
  const stuckFor = now - referenceAdvancedAt;
  if (stuckFor < peerHaltAfter) return round;
  const why = round.ignored
    ? `; head ${round.ignored.head.number} from ${round.ignored.peers.join(", ")} ignored as an implausible jump`
    : "";
  return {
    ...round,
    problem: {
      cause: "peers-halted",
      message: `reference head ${reference.number} has not advanced for ${Math.round(stuckFor / 1000)} s${why}`,
    },
  };
}

function describeNoPeer(peers: ReadonlyArray<PeerObservation>, chainId: number): string {
  if (peers.length === 0) return "no reserved peer observed";
  const unreachable = peers.filter((p) => !p.reachable).map((p) => p.name);
  const wrongChain = peers
    .filter((p) => p.reachable && p.chainId !== undefined && p.chainId !== chainId)
    .map((p) => `${p.name} (chain id ${p.chainId})`);
  const unverified = peers
    .filter(
      (p) => p.reachable && (p.chainId === undefined || (p.chainId === chainId && p.head === undefined)),
    )
    .map((p) => p.name);
  const parts = [
    unreachable.length ? `unreachable: ${unreachable.join(", ")}` : "",
    wrongChain.length ? `wrong chain, expected ${chainId}: ${wrongChain.join(", ")}` : "",
    unverified.length ? `chain id or head not known yet: ${unverified.join(", ")}` : "",
  ].filter(Boolean);
  return `no reserved peer usable (${parts.join("; ")})`;
}
