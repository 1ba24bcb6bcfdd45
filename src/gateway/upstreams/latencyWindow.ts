/** The most recent call latencies of one node and kind of call, for its quantiles. */
export class LatencyWindow {
  private readonly samples: number[] = [];
  private next = 0;
  private sorted: number[] | undefined;

  constructor(private readonly size = 128) {}

  get count(): number {
    return this.samples.length;
  }

  add(ms: number): void {
    if (this.samples.length < this.size) this.samples.push(ms);
    else this.samples[this.next] = ms;
    this.next = (this.next + 1) % this.size;
    this.sorted = undefined;
  }

  /** The q-quantile of the recent latencies (nearest rank); undefined without any. */
  quantile(q: number): number | undefined {
    if (this.samples.length === 0) return undefined;
    // Sorted at most once per new sample: a hedge decision reads it on every call.
    this.sorted ??= [...this.samples].sort((a, b) => a - b);
    const rank = Math.min(this.sorted.length, Math.max(1, Math.ceil(q * this.sorted.length)));
    return this.sorted[rank - 1];
  }
}
