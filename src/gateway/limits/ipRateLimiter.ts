export interface IpRateLimiterOptions {
  /** Calls per second each client address may make, sustained. */
  ratePerSecond: number;
  /** Calls a client may make at once after being idle (the bucket size). */
  burst: number;
  /** Clock in milliseconds (injected so the rules are testable without waiting). */
  now: () => number;
  /** Addresses tracked before full buckets are forgotten, which bounds memory under floods of addresses. */
  maxTracked?: number;
}

import type { Config } from "../../config/schema.js";

export type RateVerdict = { ok: true } | { ok: false; retryAfterMs: number };

/**
 * What the gateway asks of a per-address limit: take `calls` from the address's budget, or say when to come back; a
 * promise where the budget is kept elsewhere (Redis).
 */
export interface RateLimiter {
  take(address: string, calls: number): RateVerdict | Promise<RateVerdict>;
}

interface Bucket {
  tokens: number;
  at: number;
}

/**
 * Token buckets per client address. Each JSON-RPC call takes one token, so a batch of 50 costs 50: batching does not
 * get around the limit. A request that does not fit is refused whole and takes nothing; one larger than the burst is
 * admitted from a full bucket and paid off afterwards.
 */
export class IpRateLimiter implements RateLimiter {
  private readonly buckets = new Map<string, Bucket>();

  constructor(private readonly options: IpRateLimiterOptions) {}

  take(address: string, calls: number): RateVerdict {
    const { ratePerSecond, burst } = this.options;
    const now = this.options.now();
    const bucket = this.refilled(address, now);
    // A body larger than the burst would never fit: it is admitted from a full bucket instead, which it leaves in
    // debt, so the address then waits until its calls beyond the burst are paid for at the sustained rate.
    const needed = Math.min(calls, burst);
    if (bucket.tokens >= needed) {
      bucket.tokens -= calls;
      return { ok: true };
    }
    // The wait until `needed` tokens are there: the request is admitted then, never refused again for the same wait.
    return {
      ok: false,
      retryAfterMs: Math.max(1, Math.ceil(((needed - bucket.tokens) / ratePerSecond) * 1000)),
    };
  }

  /**
   * Charges calls the address made elsewhere (another gateway worker). The budget may go below zero, down to one burst
   * below the debt the address had here (a batch larger than the burst), so an address that overspent across workers
   * waits for it to refill, but never for more than two bursts' worth beyond what it owes.
   */
  debit(address: string, calls: number): void {
    const bucket = this.refilled(address, this.options.now());
    // A debt of its own (a batch larger than the burst) is kept: the floor is a burst below it.
    bucket.tokens = Math.max(Math.min(bucket.tokens, 0) - this.options.burst, bucket.tokens - calls);
  }

  /** Addresses currently tracked (memory bound). */
  get tracked(): number {
    return this.buckets.size;
  }

  private refilled(address: string, now: number): Bucket {
    const { ratePerSecond, burst } = this.options;
    let bucket = this.buckets.get(address);
    if (!bucket) {
      if (this.buckets.size >= (this.options.maxTracked ?? 100_000)) this.forgetFull(now);
      bucket = { tokens: burst, at: now };
      this.buckets.set(address, bucket);
      return bucket;
    }
    const elapsed = Math.max(0, now - bucket.at);
    bucket.tokens = Math.min(burst, bucket.tokens + (elapsed / 1000) * ratePerSecond);
    bucket.at = now;
    return bucket;
  }

  /** A full bucket is the same as no bucket; dropping them keeps only clients that are actually spending. */
  private forgetFull(now: number): void {
    const { ratePerSecond, burst } = this.options;
    for (const [address, bucket] of this.buckets) {
      if (bucket.tokens + ((now - bucket.at) / 1000) * ratePerSecond >= burst) this.buckets.delete(address);
    }
    // Still full of spending clients: forget the oldest rather than grow without bound.
    const excess = this.buckets.size - (this.options.maxTracked ?? 100_000) + 1;
    if (excess > 0) {
      let dropped = 0;
      for (const address of this.buckets.keys()) {
        if (dropped++ >= excess) break;
        this.buckets.delete(address);
      }
    }
  }
}

/** The limiter `gateway.rateLimit` asks for (burst: one second's worth unless set), or undefined when it is off. */
export function configuredRateLimiter(
  limit: Config["gateway"]["rateLimit"],
  now: () => number = Date.now,
): IpRateLimiter | undefined {
  if (!limit) return undefined;
  return new IpRateLimiter({
    ratePerSecond: limit.requestsPerSecond,
    burst: limit.burst ?? Math.ceil(limit.requestsPerSecond),
    now,
  });
}
