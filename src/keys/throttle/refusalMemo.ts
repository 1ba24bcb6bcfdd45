/**
 * Remembers, per process, that a throttle key is refused until some time. The database stays the authority (counts
 * only grow within a window, so "refused until T" stays true for every replica); the memo spares a burst's thousands
 * of refused attempts a database write each, which would otherwise take the event loop from everyone else, and
 * records the first refusal of each block in the audit trail rather than every one.
 */
export class RefusalMemo {
  private readonly until = new Map<string, number>();

  constructor(private readonly maxEntries = 10_000) {}

  /** Milliseconds left of a remembered refusal of `key`, or 0. */
  remaining(key: string, now: number): number {
    const until = this.until.get(key);
    if (until === undefined) return 0;
    if (until > now) return until - now;
    this.until.delete(key);
    return 0;
  }

  /** Remembers a refusal; true when it starts a new block (the one to record). */
  remember(key: string, until: number, now: number): boolean {
    const fresh = this.remaining(key, now) === 0;
    if (this.until.size >= this.maxEntries) {
      for (const [k, t] of this.until) if (t <= now) this.until.delete(k);
      // Still full: forget the oldest (Maps iterate in insertion order); the database still refuses them.
      for (const k of this.until.keys()) {
        if (this.until.size < this.maxEntries) break;
        this.until.delete(k);
      }
    }
    this.until.set(key, until);
    return fresh;
  }
}
