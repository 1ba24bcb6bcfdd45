import { Histogram } from "prom-client";
import type { HistogramConfiguration, LabelValues } from "prom-client";

/** One labelled series of a PendingHistogram: observations counted in plain numbers. */
export class HistogramCell {
  /** Observations per bucket (not cumulative); the last one is above every bound (+Inf). */
  readonly counts: number[];
  sum = 0;
  count = 0;

  constructor(private readonly bounds: readonly number[]) {
    this.counts = new Array<number>(bounds.length + 1).fill(0);
  }

  observe(value: number): void {
    let i = 0;
    // Linear: the first bucket takes most calls.
    while (i < this.bounds.length && value > this.bounds[i]!) i++;
    this.counts[i]!++;
    this.sum += value;
    this.count++;
  }
}

/**
 * A prom-client Histogram whose hot-path observations go to cells looked up once per label set, counted in plain
 * numbers and read when the histogram is scraped: prom-client validates and hashes the labels on every observe(), which
 * cost more than answering eth_blockNumber. Scrapes (text, JSON, and the cluster's sum over workers) are the ones
 * prom-client's Histogram gives for the same observations; only cells are counted, not observe().
 */
export class PendingHistogram<T extends string> extends Histogram<T> {
  private readonly cells = new Map<string, { labels: LabelValues<T>; cell: HistogramCell }>();
  private readonly bounds: readonly number[];
  private readonly metricName: string;
  private readonly metricHelp: string;

  constructor(config: HistogramConfiguration<T> & { buckets: number[] }) {
    super(config);
    this.bounds = [...config.buckets].sort((a, b) => a - b);
    this.metricName = config.name;
    this.metricHelp = config.help;
  }

  /** The cell of one label set, made on first use. */
  cell(labels: LabelValues<T>): HistogramCell {
    const key = JSON.stringify(labels);
    let entry = this.cells.get(key);
    if (!entry) {
      entry = { labels, cell: new HistogramCell(this.bounds) };
      this.cells.set(key, entry);
    }
    return entry.cell;
  }

  /**
   * The series in the shape prom-client's Registry formats (what Histogram's own getForPromString returns, and what
   * its get() turns into JSON): cumulative buckets with the series' labels shared, then +Inf, _sum and _count.
   */
  getForPromString() {
    const bucketName = `${this.metricName}_bucket`;
    const values = [];
    for (const { labels, cell } of this.cells.values()) {
      let cumulative = 0;
      for (let i = 0; i < this.bounds.length; i++) {
        cumulative += cell.counts[i]!;
        values.push({
          labels: { le: this.bounds[i]! },
          sharedLabels: labels,
          value: cumulative,
          metricName: bucketName,
          exemplar: null,
        });
      }
      values.push(
        {
          labels: { le: "+Inf" },
          sharedLabels: labels,
          value: cell.count,
          metricName: bucketName,
          exemplar: null,
        },
        {
          labels: {},
          sharedLabels: labels,
          value: cell.sum,
          metricName: `${this.metricName}_sum`,
          exemplar: undefined,
        },
        {
          labels: {},
          sharedLabels: labels,
          value: cell.count,
          metricName: `${this.metricName}_count`,
          exemplar: undefined,
        },
      );
    }
    return Promise.resolve({
      name: this.metricName,
      help: this.metricHelp,
      type: "histogram" as const,
      values,
      aggregator: "sum" as const,
    });
  }
}
