import { randomBytes } from "node:crypto";
import type { ConnectionCap } from "../limits/connectionCap.js";
import { LUA_NOW } from "./sharedStore.js";
import type { SharedStore } from "./sharedStore.js";

/**
 * Takes a lease in a set of leases (a sorted set, scored by expiry on the Redis clock) if fewer than ARGV[1] are
 * live: 1 taken, 0 at the cap. Expired leases (their holder died without giving them back) are dropped first.
 */
export const ACQUIRE_LEASE = `${LUA_NOW}
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then return 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1`;

/** Renews leases ARGV[2..] for ARGV[1] ms (adding them again if Redis lost them). */
const RENEW_LEASES = `${LUA_NOW}
for i = 2, #ARGV do redis.call('ZADD', KEYS[1], now + tonumber(ARGV[1]), ARGV[i]) end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 1`;

declare module "ioredis" {
  interface RedisCommander {
    lightfleetAcquireLease(key: string, max: number, member: string, ttlMs: number): Promise<number>;
    lightfleetRenewLeases(key: string, ttlMs: number, ...members: string[]): Promise<number>;
  }
}

const defined = new WeakSet<SharedStore>();

/** Defines the lease scripts on the store's connection (once). */
export function defineLeaseScripts(store: SharedStore): void {
  if (defined.has(store)) return;
  defined.add(store);
  store.redis.defineCommand("lightfleetAcquireLease", { numberOfKeys: 1, lua: ACQUIRE_LEASE });
  store.redis.defineCommand("lightfleetRenewLeases", { numberOfKeys: 1, lua: RENEW_LEASES });
}

export interface RedisLeaseCapOptions {
  store: SharedStore;
  /** What is counted, in the keys: "ws" (WebSocket connections). */
  pool: string;
  max: number | undefined;
  /** How long a lease lives without renewal: how long a dead replica's connections still count. */
  ttlMs?: number;
}

/** A lease lives this long unless renewed; renewed every third of it. */
const LEASE_TTL_MS = 30_000;

/**
 * A per-address cap (WebSocket connections) counted over every replica through Redis: each open connection holds a
 * lease that this replica renews while the connection lasts, so the connections of a replica that dies stop counting
 * within one lease time. While Redis cannot answer, connections are admitted (fails open) and not counted.
 */
export class RedisLeaseCap implements ConnectionCap {
  /** The leases this replica holds, per address (the last taken is given back first). */
  private readonly held = new Map<string, string[]>();
  private readonly prefix = randomBytes(6).toString("hex");
  private next = 0;
  private readonly ttlMs: number;
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly options: RedisLeaseCapOptions) {
    this.ttlMs = options.ttlMs ?? LEASE_TTL_MS;
    defineLeaseScripts(options.store);
    this.timer = setInterval(() => void this.renew(), this.ttlMs / 3);
    this.timer.unref();
  }

  acquire(address: string): boolean | Promise<boolean> {
    const { max, store, pool } = this.options;
    if (max === undefined) return true;
    const lease = `${this.prefix}:${this.next++}`;
    return store
      .run("lease", (redis) => redis.lightfleetAcquireLease(`${pool}:${address}`, max, lease, this.ttlMs))
      .then(
        (taken) => {
          if (taken !== 1) return false;
          this.hold(address, lease);
          return true;
        },
        () => {
          // Fails open; the lease is kept here, so the next renewal counts it once Redis is back.
          this.hold(address, lease);
          return true;
        },
      );
  }

  release(address: string): void {
    const { max, store, pool } = this.options;
    if (max === undefined) return;
    const leases = this.held.get(address);
    const lease = leases?.pop();
    if (leases?.length === 0) this.held.delete(address);
    if (lease)
      void store.run("lease", (redis) => redis.zrem(`${pool}:${address}`, lease)).catch(() => undefined);
  }

  close(): void {
    clearInterval(this.timer);
  }

  private hold(address: string, lease: string): void {
    const leases = this.held.get(address) ?? [];
    leases.push(lease);
    this.held.set(address, leases);
  }

  private async renew(): Promise<void> {
    const { store, pool } = this.options;
    if (!store.ready) return;
    await Promise.all(
      [...this.held].map(([address, leases]) =>
        store
          .run("lease", (redis) => redis.lightfleetRenewLeases(`${pool}:${address}`, this.ttlMs, ...leases))
          .catch(() => undefined),
      ),
    );
  }
}
