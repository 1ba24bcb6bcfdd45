import { agreedHeads, eligiblePeers, type AgreedHead } from "./referenceHead.js";
import type { NetworkParams, PeerObservation, ReferenceHead, SystemicCause } from "./types.js";
import { isPlausibleAdvance, type VelocityGateParams } from "./velocityGate.js";

export interface ReferenceHistory {
  reference?: ReferenceHead;
  referenceAdvancedAt?: number;
  quorumAt?: number;
  /** Hashes of the reference's chain at its recent heights (REFERENCE_CHAIN_DEPTH), to tell a replay from a reorg. */
  referenceChain?: ReadonlyMap<number, string>;
  /**
   * Each reserved peer's last head that passed the velocity gate, and when it was first seen: a peer seen climbing
   * steadily is judged against its own climb, not only against a reference that held for reasons of ours.
   */
  peerTrails?: ReadonlyMap<string, PeerTrail>;
}

/** A peer's last plausible head: the velocity gate's anchor for that peer. */
export interface PeerTrail {
  number: number;
  seenAt: number;
}

/** Heights of the reference's chain kept to tell a peer replaying that chain from one on a shorter fork. */
export const REFERENCE_CHAIN_DEPTH = 64;

export interface ReferenceRound extends ReferenceHistory {
  /** A quorum head refused by the velocity gate. */
  ignored?: AgreedHead;
  /**
   * Peers below the reference replaying its chain (restarted full nodes catching up): they sit out of the vote and the
   * reference holds; while they climb the peers are recovering, not halted.
   */
  catchingUp?: Array<{ name: string; head: number }>;
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
    // Before any peer has answered or failed (the first round of a pool, or of its loop restarted for an edited spec
    // with its state kept), there is nothing to judge yet: a hold, but not a failure worth a Warning.
    if (peers.length > 0 && peers.every((p) => p.pending))
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

  const { voters, catchingUp } = peersInStep(eligible, previous, health.peerQuorum);
  const gate = { blockTimeMs: network.blockTimeMs, slackBlocks: health.referenceJumpSlack };
  const peerTrails = followTrails(voters, previous, now, gate);
  if (voters.length === 0) {
    // Every peer is below the reference, replaying its chain: the reference holds, and their climb is progress.
    const climbing = catchingUp.map((p) => p.headSeenAt ?? Number.NEGATIVE_INFINITY);
    const round: ReferenceRound = {
      ...previous,
      quorumAt: now,
      peerTrails,
      catchingUp: catchingUpOf(catchingUp),
    };
    return withHalt(round, health.peerHaltAfter, now, Math.max(...climbing));
  }
  const agreed = agreedHeads(voters, health.peerQuorum);
  if (agreed.length === 0) {
    const withinGrace =
      previous.quorumAt !== undefined && now - previous.quorumAt <= disagreementGraceMs(network);
    if (withinGrace)
      return withHalt({ ...previous, peerTrails, ...caughtUpPart(catchingUp) }, health.peerHaltAfter, now);
    const heads = voters.map((p) => `${p.name}@${p.head!.number}`).join(", ");
    return {
      ...previous,
      peerTrails,
      problem: {
        cause: "peers-disagree",
        message: `no ${Math.min(health.peerQuorum, voters.length)} reserved peers agree on a head by hash (${heads})`,
      },
    };
  }

  // The gate is for a peer racing ahead alone: a head every voting peer (two at least) agrees on by hash is real,
  // however far it is (the controller lost sight of the peers for a while, or they caught up together). A head is
  // also plausible against the climb its peers were seen making: the reference may have held while they climbed
  // (they agreed on nothing by hash, one was down), and that lag is ours, not a jump of theirs.
  const chosen = agreed.find(
    (a) =>
      (a.peers.length >= 2 && a.peers.length === voters.length) ||
      isPlausibleAdvance(previous.reference, a.head.number, now, gate) ||
      a.peers.some((name) => {
        const trail = previous.peerTrails?.get(name);
        return trail !== undefined && isPlausibleAdvance(trail, a.head.number, now, gate);
      }),
  );
  const ignored = chosen === agreed[0] ? undefined : agreed[0];
  if (!chosen)
    return withHalt(
      { ...previous, quorumAt: now, peerTrails, ignored, ...caughtUpPart(catchingUp) },
      health.peerHaltAfter,
      now,
    );

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
  const referenceChain = sameHead
    ? previous.referenceChain
    : extendChain(previous.referenceChain, reference, eligible, chosen.peers);
  return withHalt(
    {
      reference,
      referenceAdvancedAt,
      quorumAt: now,
      referenceChain,
      peerTrails,
      ignored,
      ...caughtUpPart(catchingUp),
    },
    health.peerHaltAfter,
    now,
  );
}

/**
 * Each voting peer's trail after this round: its head when that head is plausible against the reference or against
 * the peer's own last trail, and is not on another chain than the reference's kept one; otherwise the old trail stays
 * (so a peer that jumped ahead is judged against where it was). Peers not voting keep theirs.
 */
function followTrails(
  voters: ReadonlyArray<PeerObservation>,
  previous: ReferenceHistory,
  now: number,
  gate: VelocityGateParams,
): ReadonlyMap<string, PeerTrail> {
  const trails = new Map(previous.peerTrails ?? []);
  const chain = previous.referenceChain;
  for (const peer of voters) {
    const head = peer.head!.number;
    const trail = trails.get(peer.name);
    const plausible =
      isPlausibleAdvance(previous.reference, head, now, gate) ||
      (trail !== undefined && isPlausibleAdvance(trail, head, now, gate));
    if (!plausible || (chain !== undefined && (offChain(peer.head!, chain) || conflictsWith(peer, chain))))
      continue;
    trails.set(peer.name, trail?.number === head ? trail : { number: head, seenAt: now });
  }
  return trails;
}

function catchingUpOf(peers: ReadonlyArray<PeerObservation>): Array<{ name: string; head: number }> {
  return peers.map((p) => ({ name: p.name, head: p.head!.number }));
}

function caughtUpPart(peers: ReadonlyArray<PeerObservation>): Pick<ReferenceRound, "catchingUp"> {
  return peers.length > 0 ? { catchingUp: catchingUpOf(peers) } : {};
}

/**
 * The reference chain's recent hashes after adopting `reference`: what the supporting peers know of the heights below
 * it (canonical for them, so it replaces what was kept, e.g. after a reorg), then the kept hashes they do not cover.
 */
function extendChain(
  kept: ReadonlyMap<number, string> | undefined,
  reference: ReferenceHead,
  peers: ReadonlyArray<PeerObservation>,
  supporters: ReadonlyArray<string>,
): ReadonlyMap<number, string> {
  const lowest = reference.number - REFERENCE_CHAIN_DEPTH + 1;
  const chain = new Map<number, string>([[reference.number, reference.hash]]);
  const supporter = peers.find((p) => supporters.includes(p.name));
  for (let h = reference.number - 1; h >= lowest && h >= 0; h--) {
    const hash = supporter?.recentHashes?.get(h) ?? kept?.get(h);
    if (hash !== undefined) chain.set(h, hash);
  }
  return chain;
}

/**
 * The peers that vote on the reference, and those catching up. A peer whose head is below the last adopted reference
 * is catching up (a restarted full node replaying its chain): it sits out until it is back, so peers rejoining low
 * never pull the reference backwards, whether one of them or all of them. The reference goes down only on a reorg the
 * peers agree on by hash: when every peer is below it and a head they agree on (or a hash they know) differs from the
 * reference's chain at that height, they all vote and the reference follows them.
 */
export function peersInStep(
  eligible: PeerObservation[],
  previous: Pick<ReferenceHistory, "reference" | "referenceChain">,
  quorum: number,
): { voters: PeerObservation[]; catchingUp: PeerObservation[] } {
  const reference = previous.reference;
  if (reference === undefined) return { voters: eligible, catchingUp: [] };
  const inStep = eligible.filter((p) => p.head!.number >= reference.number);
  const below = eligible.filter((p) => p.head!.number < reference.number);
  if (inStep.length > 0) return { voters: inStep, catchingUp: below };
  const chain = previous.referenceChain ?? new Map([[reference.number, reference.hash]]);
  const reorg = agreedHeads(eligible, quorum).some(
    (a) =>
      offChain(a.head, chain) ||
      a.peers.some((name) => {
        const p = eligible.find((e) => e.name === name)!;
        return conflictsWith(p, chain);
      }),
  );
  return reorg ? { voters: eligible, catchingUp: [] } : { voters: [], catchingUp: below };
}

function offChain(head: { number: number; hash: string }, chain: ReadonlyMap<number, string>): boolean {
  const known = chain.get(head.number);
  return known !== undefined && known !== head.hash;
}

/** Whether a peer knows a hash at some height of the reference's chain that the chain has otherwise. */
function conflictsWith(peer: PeerObservation, chain: ReadonlyMap<number, string>): boolean {
  for (const [height, hash] of peer.recentHashes ?? []) {
    const known = chain.get(height);
    if (known !== undefined && known !== hash) return true;
  }
  return false;
}

/**
 * Peer-side halt: the reference has not advanced, and no peer catching up to it has climbed either, for
 * `peerHaltAfter`. `climbedAt` is when a peer below the reference last showed a new head.
 */
function withHalt(
  round: ReferenceRound,
  peerHaltAfter: number,
  now: number,
  climbedAt = Number.NEGATIVE_INFINITY,
): ReferenceRound {
  const { reference, referenceAdvancedAt } = round;
  if (reference === undefined || referenceAdvancedAt === undefined) return round;
  const stuckFor = now - Math.max(referenceAdvancedAt, climbedAt);
  if (stuckFor < peerHaltAfter) return round;
  const ignored = round.ignored
    ? `; head ${round.ignored.head.number} from ${round.ignored.peers.join(", ")} ignored as an implausible jump`
    : "";
  const catchingUp = round.catchingUp?.length
    ? `; ${round.catchingUp.map((p) => `${p.name} at ${p.head}`).join(", ")} below it and not climbing`
    : "";
  const why = ignored + catchingUp;
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
