/** Budget amounts are kept in millionths of a call: whole numbers, so ten tenths make exactly one call. */
const UNIT = 1_000_000;

/**
 * The budget of extra upstream calls (hedges, and reads moved off a hung node while another attempt of theirs is in
 * flight): a token bucket filled by the clients' calls sent to a node, `share` of a token each, up to `burst` tokens;
 * an extra call takes one. It starts empty, so from the first call on, extra calls never exceed `share` x calls, however
 * slow every node gets: an incident where all nodes are slow does not double the load on them. A move a read cannot
 * do without (every attempt of it is on a hung node) goes even when the bucket is empty, and is owed: later calls pay
 * it back before any hedge goes. Counted in calls, not time: no clock.
 */
export class HedgeBudget {
  private tokens = 0;
  private readonly earned: number;
  private readonly cap: number;

  constructor(share: number, burst: number) {
    this.earned = Math.round(share * UNIT);
    this.cap = burst * UNIT;
  }

  /** One client call sent to a node (its first attempt). */
  earn(): void {
    this.tokens = Math.min(this.cap, this.tokens + this.earned);
  }

  /** Whether a token is there to take. */
  left(): boolean {
    return this.tokens >= UNIT;
  }

  /** Takes a token for one extra call; false when the budget is spent. */
  take(): boolean {
    if (this.tokens < UNIT) return false;
    this.tokens -= UNIT;
    return true;
  }

  /** An extra call that went whatever the budget said: taken from it all the same, into debt if need be. */
  charge(): void {
    this.tokens -= UNIT;
  }
}
