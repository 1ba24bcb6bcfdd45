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
    pending?: boolean;
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
    // Before any peer has answered or failed (the first round of a pool), there is nothing to judge yet.
    if (peers.length > 0 && peers.every((p) => p.pending) && previous.reference === undefined)
      return {
        ...previous,
        problem: {
          cause: "no-peer-reachable",
          message: `waiting for the first answer of the reserved peers (${peers.map((p) => p.name).join(", ")})`,
          pending: true,
        },
      };
    return {
      ...previous,
      problem: { cause: "no-peer-reachable", message: describeNoPeer(peers, network.chainId) },
    };
  }

  const voters = peersInStep(eligible, previous.reference);
  const agreed = agreedHeads(voters, health.peerQuorum);
  if (agreed.length === 0) {
    const withinGrace =
      previous.quorumAt !== undefined && now - previous.quorumAt <= disagreementGraceMs(network);
    if (withinGrace) return withHalt({ ...previous }, health.peerHaltAfter, now);
    const heads = voters.map((p) => `${p.name}@${p.head!.number}`).join(", ");
    return {
      ...previous,
      problem: {
        cause: "peers-disagree",
        message: `no ${Math.min(health.peerQuorum, voters.length)} reserved peers agree on a head by hash (${heads})`,
      },
    };
  }

  const gate = { blockTimeMs: network.blockTimeMs, slackBlocks: health.referenceJumpSlack };
  // The gate is for a peer racing ahead alone: a head every voting peer (two at least) agrees on by hash is real,
  // however far it is (the controller lost sight of the peers for a while, or they caught up together).
  const chosen = agreed.find(
    (a) =>
      (a.peers.length >= 2 && a.peers.length === voters.length) ||
      isPlausibleAdvance(previous.reference, a.head.number, now, gate),
  );
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

/**
 * The peers that vote on the reference. A peer whose head is below the last adopted reference while another peer is
 * at or above it is catching up (a restarted full node replaying its chain): it sits out until it is back, so one
 * peer rejoining low never pulls the reference backwards. When every peer is below it (a reorg to a shorter chain),
 * they all vote and the reference follows them down.
 */
export function peersInStep(
  eligible: PeerObservation[],
  previous: ReferenceHead | undefined,
): PeerObservation[] {
  if (previous === undefined) return eligible;
  const inStep = eligible.filter((p) => p.head!.number >= previous.number);
  return inStep.length === 0 || inStep.length === eligible.length ? eligible : inStep;
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
