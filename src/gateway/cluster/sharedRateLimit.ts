import type { IpRateLimiter, RateLimiter, RateVerdict } from "../limits/ipRateLimiter.js";

/** Calls each address spent, as workers tell each other. */
export type Spending = Array<[address: string, calls: number]>;

/** Addresses in one report at most; the rest wait for the next one, so a flood of addresses makes no huge message. */
const MAX_ADDRESSES_PER_REPORT = 10_000;

/**
 * The per-address limit of one gateway worker, shared with the others: each worker takes from buckets of its own at
 * the full configured rate, so a client whose connection lands on one worker gets the whole rate, and the calls it
 * took are reported (`spent`) and charged to the other workers' buckets (`debit`) a report period later. Across
 * workers an address may overspend by what the others allow within one period, never for longer.
 */
export class SharedRateLimiter implements RateLimiter {
  private spending = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;

  /**
   * With `report`, what was spent is sent every `everyMs` while there is some: the timer is set by the first call
   * spent after a report, so an idle worker is not woken every period for nothing.
   */
  constructor(
    private readonly local: IpRateLimiter,
    private readonly report?: { everyMs: number; send: (spent: Spending) => void },
  ) {}

  take(address: string, calls: number): RateVerdict {
    const verdict = this.local.take(address, calls);
    if (verdict.ok) {
      this.spending.set(address, (this.spending.get(address) ?? 0) + calls);
      this.scheduleReport();
    }
    return verdict;
  }

  /** Stops the reports. */
  close(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private scheduleReport(): void {
    const report = this.report;
    if (!report || this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      const spent = this.spent();
      if (spent.length > 0) report.send(spent);
      // More addresses than one report holds: the rest go in the next.
      if (this.spending.size > 0) this.scheduleReport();
    }, report.everyMs);
  }

  /** What this worker's clients spent since the last report. */
  spent(): Spending {
    const report: Spending = [];
    for (const [address, calls] of this.spending) {
      if (report.length >= MAX_ADDRESSES_PER_REPORT) break;
      report.push([address, calls]);
      this.spending.delete(address);
    }
    return report;
  }

  /** Charges what another worker's clients spent. */
  debit(spending: Spending): void {
    for (const [address, calls] of spending) this.local.debit(address, calls);
  }
}
