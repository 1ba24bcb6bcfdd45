/**
 * The hedge budget: a token bucket filled by the calls sent, `share` of a token each, up to `burst` tokens; a hedge
 * takes one. So hedges add at most `share` extra upstream calls (plus the burst), however slow every node gets: an
 * incident where all nodes are slow does not double the load on them. Counted in calls, not time: no clock.
 */
export class HedgeBudget {
  private tokens: number;

  constructor(
    private readonly share: number,
    private readonly burst: number,
  ) {
    this.tokens = Math.min(burst, share > 0 ? 1 : 0);
  }

  /** One call sent (not a hedge). */
  earn(): void {
    this.tokens = Math.min(this.burst, this.tokens + this.share);
  }

  /** Takes a token for one hedge; false when the budget is spent. */
  take(): boolean {
    // Ten tenths make a token, whatever the floating-point sum says.
    if (this.tokens < 1 - 1e-9) return false;
    this.tokens = Math.max(0, this.tokens - 1);
    return true;
  }
}
