/**
 * Fail static: when more than `systemicBadFraction` of the established pool turns bad at once, the cause is almost
 * never the nodes (a shared upstream, the reference, the controller's own network), and restarting or unrouting
 * them would make things worse. A single node going bad is never systemic, so small pools still heal.
 */
export interface PoolTurn {
  /** Nodes past their start-up and not restarting. */
  established: number;
  /** Of those, nodes Healthy before this round whose probe is bad now. */
  turningBad: number;
}

export const MIN_NODES_FOR_SYSTEMIC = 2;

export function isPoolMostlyBad(turn: PoolTurn, systemicBadFraction: number): boolean {
  return (
    turn.turningBad >= MIN_NODES_FOR_SYSTEMIC && turn.turningBad > systemicBadFraction * turn.established
  );
}
