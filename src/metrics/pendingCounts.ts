import type { Counter, LabelValues } from "prom-client";

/** One labelled series counted in a plain number. */
export interface CountCell {
  n: number;
}

/**
 * Counts of a hot path kept in plain numbers, one cell per label set looked up once, and added to the prom-client
 * counter when it is collected (a scrape): prom-client hashes and validates the labels on every inc(), which costs
 * more than the rest of answering eth_blockNumber.
 */
export class PendingCounts<T extends string> {
  private readonly cells = new Map<string, { labels: LabelValues<T>; cell: CountCell }>();

  /** The cell of one label set; `key` must identify the label values. */
  cell(key: string, labels: LabelValues<T>): CountCell {
    let entry = this.cells.get(key);
    if (!entry) {
      entry = { labels, cell: { n: 0 } };
      this.cells.set(key, entry);
    }
    return entry.cell;
  }

  /** Adds what was counted since the last flush to the counter. */
  flushInto(counter: Counter<T>): void {
    for (const { labels, cell } of this.cells.values()) {
      if (cell.n === 0) continue;
      counter.inc(labels, cell.n);
      cell.n = 0;
    }
  }
}
