import { afterEach, describe, expect, it, vi } from "vitest";
import { SharedRateLimiter } from "../../../src/gateway/cluster/sharedRateLimit.js";
import type { Spending } from "../../../src/gateway/cluster/sharedRateLimit.js";
import { IpRateLimiter } from "../../../src/gateway/limits/ipRateLimiter.js";

/** `count` workers' limiters on one clock, and the relay the primary makes between them. */
function workers(count: number, options: { rate: number; burst: number }) {
  let now = 0;
  const all = Array.from(
    { length: count },
    () =>
      new SharedRateLimiter(
        new IpRateLimiter({ ratePerSecond: options.rate, burst: options.burst, now: () => now }),
      ),
  );
  /** One report period: every worker's spending charged to the others. */
  const share = () => {
    const reports = all.map((w) => w.spent());
    all.forEach((w, i) => reports.forEach((spent, j) => i !== j && w.debit(spent)));
  };
  return { all, share, advance: (ms: number) => (now += ms) };
}

describe("the per-address limit shared by gateway workers", () => {
  it("gives an address on one worker the whole burst and rate, not a share of it", () => {
    const { all, advance } = workers(4, { rate: 10, burst: 20 });
    const [first] = all;
    expect(first!.take("a", 20).ok).toBe(true);
    expect(first!.take("a", 1).ok).toBe(false);
    advance(1_000);
    expect(first!.take("a", 10).ok).toBe(true);
  });

  it("charges what an address spent on one worker to the others once reported", () => {
    const { all, share } = workers(2, { rate: 10, burst: 20 });
    const [a, b] = all;
    expect(a!.take("client", 15).ok).toBe(true);
    share();
    // After the report, the other worker has only what is left of the one budget.
    expect(b!.take("client", 6).ok).toBe(false);
    expect(b!.take("client", 5).ok).toBe(true);
    share();
    expect(a!.take("client", 1).ok).toBe(false);
    // Another address is untouched.
    expect(b!.take("other", 20).ok).toBe(true);
  });

  it("holds an address spreading a flood over the workers to the configured rate", () => {
    const { all, share, advance } = workers(4, { rate: 100, burst: 100 });
    let accepted = 0;
    // 10 s of 10 calls every 10 ms on each of 4 workers (4,000 calls/s), reports every 100 ms.
    for (let tick = 1; tick <= 1_000; tick++) {
      advance(10);
      for (const worker of all) if (worker.take("flood", 10).ok) accepted += 10;
      if (tick % 10 === 0) share();
    }
    // The configured 100/s over 10 s plus the burst, give or take what the workers allow within one period.
    expect(accepted).toBeGreaterThanOrEqual(1_000);
    expect(accepted).toBeLessThanOrEqual(1_100 + 4 * 100);
  });

  it("makes an overspent address wait for its budget to refill, at most two bursts' worth", () => {
    const limiter = new IpRateLimiter({ ratePerSecond: 10, burst: 20, now: () => 0 });
    limiter.debit("a", 1_000);
    expect(limiter.take("a", 1)).toEqual({ ok: false, retryAfterMs: 2_100 });
  });

  it("reports each spending once, a bounded number of addresses at a time", () => {
    const { all } = workers(1, { rate: 1, burst: 1 });
    const [w] = all;
    for (let i = 0; i < 10_005; i++) w!.take(`10.0.${Math.floor(i / 256)}.${i % 256}`, 1);
    expect(w!.spent()).toHaveLength(10_000);
    expect(w!.spent()).toHaveLength(5);
    expect(w!.spent()).toHaveLength(0);
  });
});

describe("a worker's reports of what its clients spent", () => {
  afterEach(() => vi.useRealTimers());

  it("sets no timer while nothing is spent, and reports within one period of a spending", () => {
    vi.useFakeTimers();
    const reports: Spending[] = [];
    const limiter = new SharedRateLimiter(new IpRateLimiter({ ratePerSecond: 10, burst: 20, now: () => 0 }), {
      everyMs: 100,
      send: (spent) => reports.push(spent),
    });
    // An idle worker is not woken every period for nothing.
    expect(vi.getTimerCount()).toBe(0);
    expect(limiter.take("a", 2).ok).toBe(true);
    expect(limiter.take("a", 1).ok).toBe(true);
    expect(vi.getTimerCount()).toBe(1);
    vi.advanceTimersByTime(99);
    expect(reports).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(reports).toEqual([[["a", 3]]]);
    expect(vi.getTimerCount()).toBe(0);
    expect(limiter.take("b", 1).ok).toBe(true);
    vi.advanceTimersByTime(100);
    expect(reports).toEqual([[["a", 3]], [["b", 1]]]);
    limiter.close();
  });

  it("reports what one report could not hold in the next period", () => {
    vi.useFakeTimers();
    const reports: Spending[] = [];
    const limiter = new SharedRateLimiter(new IpRateLimiter({ ratePerSecond: 1, burst: 1, now: () => 0 }), {
      everyMs: 100,
      send: (spent) => reports.push(spent),
    });
    for (let i = 0; i < 10_005; i++) limiter.take(`10.0.${Math.floor(i / 256)}.${i % 256}`, 1);
    vi.advanceTimersByTime(200);
    expect(reports.map((r) => r.length)).toEqual([10_000, 5]);
    expect(vi.getTimerCount()).toBe(0);
  });
});
