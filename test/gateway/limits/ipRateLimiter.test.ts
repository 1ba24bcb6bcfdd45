import { describe, expect, it } from "vitest";
import { IpRateLimiter } from "../../../src/gateway/limits/ipRateLimiter.js";

function limiter(options: { rate: number; burst: number; maxTracked?: number }) {
  let now = 0;
  const l = new IpRateLimiter({
    ratePerSecond: options.rate,
    burst: options.burst,
    now: () => now,
    ...(options.maxTracked ? { maxTracked: options.maxTracked } : {}),
  });
  return { l, advance: (ms: number) => (now += ms) };
}

describe("per-address rate limit", () => {
  it("counts each call of a batch, and refuses a request that does not fit whole without taking anything", () => {
    const { l } = limiter({ rate: 10, burst: 10 });
    expect(l.take("a", 8).ok).toBe(true);
    expect(l.take("a", 3)).toEqual({ ok: false, retryAfterMs: 100 });
    // The refused 3 took nothing: 2 are still there.
    expect(l.take("a", 2).ok).toBe(true);
    expect(l.take("a", 1).ok).toBe(false);
  });

  it("refills at the sustained rate up to the burst, and says how long to wait", () => {
    const { l, advance } = limiter({ rate: 5, burst: 10 });
    expect(l.take("a", 10).ok).toBe(true);
    expect(l.take("a", 5)).toEqual({ ok: false, retryAfterMs: 1000 });
    advance(400);
    expect(l.take("a", 2).ok).toBe(true);
    expect(l.take("a", 1).ok).toBe(false);
    advance(60_000);
    expect(l.take("a", 10).ok).toBe(true);
    expect(l.take("a", 1).ok).toBe(false);
  });

  it("admits a batch larger than the burst from a full bucket and makes the address wait it off, never 'retry now'", () => {
    const { l, advance } = limiter({ rate: 5, burst: 5 });
    // Not full: refused with the honest wait until it is (2 tokens left, 3 to refill at 5/s).
    expect(l.take("a", 3).ok).toBe(true);
    expect(l.take("a", 12)).toEqual({ ok: false, retryAfterMs: 600 });
    advance(600);
    // Full: admitted, and the 7 calls beyond the burst are owed.
    expect(l.take("a", 12)).toEqual({ ok: true });
    expect(l.take("a", 1)).toEqual({ ok: false, retryAfterMs: 1600 });
    advance(1599);
    expect(l.take("a", 1).ok).toBe(false);
    advance(1);
    expect(l.take("a", 1).ok).toBe(true);
  });

  it("never answers a refusal with a wait after which the same request is refused again", () => {
    const { l, advance } = limiter({ rate: 3, burst: 4 });
    for (const calls of [1, 2, 4, 5, 9, 50, 3, 100, 1, 7]) {
      const verdict = l.take("a", calls);
      if (verdict.ok) continue;
      expect(verdict.retryAfterMs).toBeGreaterThan(0);
      advance(verdict.retryAfterMs);
      expect(l.take("a", calls).ok).toBe(true);
    }
  });

  it("keeps what an address owes when another worker charges it", () => {
    const { l } = limiter({ rate: 1, burst: 2 });
    expect(l.take("a", 10).ok).toBe(true);
    l.debit("a", 1);
    expect(l.take("a", 1)).toEqual({ ok: false, retryAfterMs: 10_000 });
  });

  it("keeps addresses apart", () => {
    const { l } = limiter({ rate: 1, burst: 2 });
    expect(l.take("a", 2).ok).toBe(true);
    expect(l.take("a", 1).ok).toBe(false);
    expect(l.take("b", 2).ok).toBe(true);
  });

  it("stays bounded in memory under a flood of addresses, forgetting idle (full) ones first", () => {
    const { l, advance } = limiter({ rate: 1, burst: 5, maxTracked: 100 });
    expect(l.take("spender", 5).ok).toBe(true);
    for (let i = 0; i < 1000; i++) {
      l.take(`10.0.${i >> 8}.${i & 255}`, 1);
      expect(l.tracked).toBeLessThanOrEqual(100);
    }
    // The limit still holds for an address that comes after the flood: its burst, then nothing.
    advance(10);
    expect(l.take("late", 5).ok).toBe(true);
    expect(l.take("late", 1).ok).toBe(false);
  });
});
