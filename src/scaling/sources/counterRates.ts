/**
 * Turns samples of cumulative counters into a rate over a window, as Prometheus' rate() does without its
 * extrapolation: per series, the increase between the oldest and the newest sample (a drop is a counter reset, so the
 * new value counts whole) divided by the time between them; the rates of a network's series (one per gateway) add up.
 * Pure: times come from the caller.
 */
export class CounterRates {
  /** network -> series -> samples, oldest first. */
  private readonly samples = new Map<string, Map<string, Array<{ at: number; value: number }>>>();

  record(network: string, series: string, at: number, value: number): void {
    let bySeries = this.samples.get(network);
    if (!bySeries) this.samples.set(network, (bySeries = new Map()));
    let list = bySeries.get(series);
    if (!list) bySeries.set(series, (list = []));
    const last = list.at(-1);
    if (last && at <= last.at) return;
    list.push({ at, value });
  }

  /**
   * Requests per second of `network` over the window ending at `now`, or undefined while no series has two samples
   * (warming up). Samples older than the window are dropped, except the newest of them, which anchors the window's
   * start; series with no sample within the window (a gateway that went away) are dropped.
   */
  rate(network: string, now: number, windowMs: number): number | undefined {
    const bySeries = this.samples.get(network);
    if (!bySeries) return undefined;
    let total = 0;
    let measured = false;
    for (const [series, list] of bySeries) {
      const start = now - windowMs;
      while (list.length > 1 && list[1]!.at <= start) list.shift();
      if (list.length === 0 || list.at(-1)!.at < start) {
        bySeries.delete(series);
        continue;
      }
      if (list.length < 2) continue;
      let increase = 0;
      for (let i = 1; i < list.length; i++) {
        const delta = list[i]!.value - list[i - 1]!.value;
        increase += delta >= 0 ? delta : list[i]!.value;
      }
      total += increase / ((list.at(-1)!.at - list[0]!.at) / 1000);
      measured = true;
    }
    return measured ? total : undefined;
  }
}
