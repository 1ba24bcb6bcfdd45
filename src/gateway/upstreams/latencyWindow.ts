/**
 * The most recent call latencies of one node and kind of call, for its quantiles. Kept in arrival order (to drop the
 * oldest) and in sorted order, updated at each sample by a binary search and a shift of at most `size` numbers: a
 * hedge decision reads a quantile on every forwarded call, and sorting the window again after each answer cost more
 * than the rest of the call's own work.
 */
export class LatencyWindow {
  /** The samples in arrival order, a ring; `next` is where the next one goes. */
  private readonly ring: Float64Array;
  /** The same samples sorted, in its first `length` places. */
  private readonly sorted: Float64Array;
  private length = 0;
  private next = 0;

  constructor(private readonly size = 128) {
    this.ring = new Float64Array(size);
    this.sorted = new Float64Array(size);
  }

  get count(): number {
    return this.length;
  }

  add(ms: number): void {
    const { ring, sorted } = this;
    if (this.length === this.size) {
      // Full: the oldest sample leaves where the new one comes in, so only the samples between the two places move
      // by one: one copyWithin (a call into the runtime each) where there were two.
      const out = this.firstAtLeast(ring[this.next]!);
      ring[this.next] = ms;
      this.next = (this.next + 1) % this.size;
      const at = this.firstAtLeast(ms);
      if (at > out) {
        if (at - 1 > out) sorted.copyWithin(out, out + 1, at);
        sorted[at - 1] = ms;
      } else {
        if (out > at) sorted.copyWithin(at + 1, at, out);
        sorted[at] = ms;
      }
      return;
    }
    ring[this.next] = ms;
    this.next = (this.next + 1) % this.size;
    const at = this.firstAtLeast(ms);
    sorted.copyWithin(at + 1, at, this.length);
    sorted[at] = ms;
    this.length++;
  }

  /** The q-quantile of the recent latencies (nearest rank); undefined without any. */
  quantile(q: number): number | undefined {
    if (this.length === 0) return undefined;
    const rank = Math.min(this.length, Math.max(1, Math.ceil(q * this.length)));
    return this.sorted[rank - 1];
  }

  /** The first place in the sorted samples whose value is not below `ms`. */
  private firstAtLeast(ms: number): number {
    let low = 0;
    let high = this.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (this.sorted[middle]! < ms) low = middle + 1;
      else high = middle;
    }
    return low;
  }
}
