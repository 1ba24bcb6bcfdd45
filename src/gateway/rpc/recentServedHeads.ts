/**
 * The served heads of the last window of time, to judge a call against the head its client could have seen: a client
 * that read the head and asks for `head - limit .. latest` in its next call must not be refused because a block came
 * in between. Pure: the clock is passed in.
 */
export class RecentServedHeads {
  /** Served heads in the order they were served, with when; the first may predate the window (it was current then). */
  private readonly entries: Array<{ head: number; at: number }> = [];

  constructor(private readonly windowMs: number) {}

  record(head: number, at: number): void {
    if (this.entries.at(-1)?.head === head) return;
    this.entries.push({ head, at });
    this.trim(at);
  }

  /** The lowest head served within the window ending at `now` (the head current at its start included). */
  lowest(now: number, current: number): number {
    this.trim(now);
    let lowest = current;
    for (const entry of this.entries) if (entry.head < lowest) lowest = entry.head;
    return lowest;
  }

  /** Entries kept (a bound for tests). */
  get size(): number {
    return this.entries.length;
  }

  /** Drops what the window no longer reaches: every entry but the last one that began before the window's start. */
  private trim(now: number): void {
    const start = now - this.windowMs;
    let drop = 0;
    while (drop + 1 < this.entries.length && this.entries[drop + 1]!.at <= start) drop++;
    if (drop > 0) this.entries.splice(0, drop);
  }
}
