import type { RateLimiter, RateVerdict } from "../limits/ipRateLimiter.js";
import { LUA_NOW } from "./sharedStore.js";
import type { SharedStore, StoreOperation } from "./sharedStore.js";

/**
 * The token bucket of ipRateLimiter.ts, kept in Redis and updated by one script (atomic: replicas taking from the
 * same bucket at once never both spend its last token). Answers 0 when admitted, else the wait in milliseconds. The
 * key expires once the bucket would be full again, so idle addresses cost nothing.
 */
const TAKE = `${LUA_NOW}
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local calls = tonumber(ARGV[3])
local b = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(b[1])
local at = tonumber(b[2])
if tokens == nil or at == nil then tokens = burst; at = now end
tokens = math.min(burst, tokens + math.max(0, now - at) / 1000 * rate)
local needed = math.min(calls, burst)
local wait = 0
if tokens >= needed then tokens = tokens - calls else wait = math.max(1, math.ceil((needed - tokens) / rate * 1000)) end
redis.call('HSET', KEYS[1], 'tokens', string.format('%.6f', tokens), 'at', now)
redis.call('PEXPIRE', KEYS[1], math.ceil((burst - tokens) / rate * 1000) + 1000)
return wait`;

declare module "ioredis" {
  interface RedisCommander {
    lightfleetTakeTokens(key: string, rate: number, burst: number, calls: number): Promise<number>;
  }
}

const defined = new WeakSet<SharedStore>();

export interface RedisRateLimiterOptions {
  store: SharedStore;
  /** What the buckets are for, in their keys: "rate" (client addresses), "tx" (transaction senders). */
  kind: "rate" | "tx";
  ratePerSecond: number;
  burst: number;
}

/**
 * A per-key rate limit shared by every replica (and worker) through Redis: the total over all of them is the
 * configured rate. While Redis cannot answer within its command timeout the limit is not applied (fails open): a
 * store outage must not take the endpoint down with it; the errors counter and alert say it happened.
 */
export class RedisRateLimiter implements RateLimiter {
  private readonly operation: StoreOperation;

  constructor(private readonly options: RedisRateLimiterOptions) {
    this.operation = options.kind === "rate" ? "rate_limit" : "transaction_limit";
    if (!defined.has(options.store)) {
      defined.add(options.store);
      options.store.redis.defineCommand("lightfleetTakeTokens", { numberOfKeys: 1, lua: TAKE });
    }
  }

  async take(address: string, calls: number): Promise<RateVerdict> {
    const { store, kind, ratePerSecond, burst } = this.options;
    try {
      const wait = await store.run(this.operation, (redis) =>
        redis.lightfleetTakeTokens(`${kind}:${address}`, ratePerSecond, burst, calls),
      );
      return wait === 0 ? { ok: true } : { ok: false, retryAfterMs: wait };
    } catch {
      return { ok: true };
    }
  }
}
