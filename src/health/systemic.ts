import type { SystemicCause } from "./types.js";

/**
 * Fail static: when the evidence against the nodes lies outside them (no peer reachable, peers disagreeing or
 * halted), or the whole pool turns bad at once with no node keeping up, restarting or unrouting nodes would make
 * things worse, so the engine holds: no restarts, states and routing kept. A hold is bounded: after
 * `failStaticMaxHold` the nodes are judged on their own again, one restart at a time under the usual budget.
 */
export interface PoolTurn {
  /** Nodes past their start-up and not restarting. */
  established: number;
  /** Of those, nodes Healthy before this round whose probe is bad now. */
  turningBad: number;
  /** Nodes whose probe is good against an agreed reference: proof that the pool's bad nodes are bad on their own. */
  keepingUp: number;
}

export const MIN_NODES_FOR_SYSTEMIC = 2;

export interface SystemicProblem {
  cause: SystemicCause;
  message: string;
  /**
   * No reserved peer has answered yet (nor failed): the engine holds as for any systemic problem, but it is the start
   * of a pool, not a failure worth a Warning.
   */
  pending?: boolean;
}

/**
 * More than `systemicBadFraction` of the established pool (and two nodes at least) turning bad at once is systemic,
 * unless some node keeps up with the agreed reference: then the others are simply bad. A single node going bad is
 * never systemic, so small pools still heal.
 */
export function isPoolMostlyBad(turn: PoolTurn, systemicBadFraction: number): boolean {
  return (
    turn.keepingUp === 0 &&
    turn.turningBad >= MIN_NODES_FOR_SYSTEMIC &&
    turn.turningBad > systemicBadFraction * turn.established
  );
}

export interface FailStaticRound {
  /** Holding now: no restarts, states and routing kept. */
  hold?: SystemicProblem & { since: number; holdUntil: number };
  /** The systemic condition lasts, but the hold has run out: nodes are judged on their own. */
  released?: SystemicProblem & { since: number };
  /** When the current systemic episode began (kept between rounds; undefined when there is none). */
  since?: number;
}

/**
 * Whether this round holds. The episode's start survives a change of cause, so flipping causes cannot stretch a hold.
 */
export function decideFailStatic(
  problem: SystemicProblem | undefined,
  episodeSince: number | undefined,
  now: number,
  maxHold: number,
): FailStaticRound {
  if (problem === undefined) return {};
  const since = episodeSince ?? now;
  const holdUntil = since + maxHold;
  if (now >= holdUntil) return { released: { ...problem, since }, since };
  const until = new Date(holdUntil).toISOString();
  const message = `${problem.message}; held for at most ${Math.round(maxHold / 1000)} s (until ${until})`;
  return {
    hold: { cause: problem.cause, message, since, holdUntil, ...(problem.pending ? { pending: true } : {}) },
    since,
  };
}
