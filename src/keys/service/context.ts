import { createHash } from "node:crypto";
import { availableParallelism } from "node:os";
import type { KeyStore } from "../store/database.js";
import type { AuditEvent } from "../store/schema.js";
import { SeedCipher } from "../crypto/seedCipher.js";
import { HashingGate } from "../throttle/hashingGate.js";
import type { HashingGateLimits } from "../throttle/hashingGate.js";
import { RefusalMemo } from "../throttle/refusalMemo.js";
import type { SlowDownPolicy } from "../throttle/slowDown.js";

export interface KeysServiceOptions {
  store: KeyStore;
  pepper: Buffer;
  /** The key TOTP seeds are sealed under (never stored in the database). */
  seedKey: Buffer;
  clock?: () => number;
  /** A session unused this long ends. */
  idleTimeoutMs?: number;
  /** A session ends this long after login whatever its use. */
  absoluteTimeoutMs?: number;
  /** Attempts per account and address pair (and per account for a second factor) within the window; more get 429. */
  maxFailures?: number;
  /** Failed logins per address within the window, whatever the accounts; more get 429. */
  maxAddressFailures?: number;
  failureWindowMs?: number;
  /** The per-account slow-down against guessing from many addresses. */
  slowDown?: Partial<Omit<SlowDownPolicy, "windowMs">>;
  /** Concurrent password checks. */
  hashing?: Partial<HashingGateLimits>;
  /** Audit entries are kept this long; failed logins for emails with no account a shorter time. */
  auditRetentionMs?: number;
  strangerAuditRetentionMs?: number;
}

/** Who and where a state change came from, for the audit trail. */
export interface Actor {
  ip: string;
}

/**
 * What every part of the key service shares: the store, the clock, the limits and throttles, the seed cipher, and
 * writing to the audit trail. One per service, so all parts count attempts against the same gate and memo.
 */
export class KeysContext {
  readonly clock: () => number;
  readonly idleTimeoutMs: number;
  readonly absoluteTimeoutMs: number;
  readonly maxFailures: number;
  readonly maxAddressFailures: number;
  readonly failureWindowMs: number;
  readonly slowDown: SlowDownPolicy;
  readonly gate: HashingGate;
  readonly seeds: SeedCipher;
  readonly refusals = new RefusalMemo();

  constructor(readonly options: KeysServiceOptions) {
    this.clock = options.clock ?? Date.now;
    this.idleTimeoutMs = options.idleTimeoutMs ?? 30 * 60_000;
    this.absoluteTimeoutMs = options.absoluteTimeoutMs ?? 12 * 3_600_000;
    this.maxFailures = options.maxFailures ?? 5;
    this.maxAddressFailures = options.maxAddressFailures ?? 100;
    this.failureWindowMs = options.failureWindowMs ?? 15 * 60_000;
    this.slowDown = {
      after: 10,
      baseDelayMs: 1_000,
      maxDelayMs: 30_000,
      ...options.slowDown,
      windowMs: this.failureWindowMs,
    };
    // scrypt runs on libuv's thread pool (4 threads by default): more at once only queue there, unfairly. Past as
    // many in flight as run at once, attempts on one account wait in its own line, which takes turns by network: the
    // owner's waits its turn rather than being refused, and one account's guessers hold no place of the shared queue
    // beyond the checks that can run.
    const total = Math.min(4, Math.max(2, availableParallelism()));
    this.gate = new HashingGate({
      perAccount: total,
      accountQueue: 256,
      perAddress: 2,
      total,
      queue: 64,
      ...options.hashing,
    });
    this.seeds = new SeedCipher(options.seedKey);
  }

  get db() {
    return this.options.store.db;
  }

  get pepper(): Buffer {
    return this.options.pepper;
  }

  async audit(email: string | null, event: AuditEvent, detail: string): Promise<void> {
    await this.db
      .insertInto("audit")
      .values({ at: this.clock(), email, event, detail: detail.slice(0, 255) })
      .execute();
  }

  async emailOf(userId: number): Promise<string | null> {
    const row = await this.db.selectFrom("users").select("email").where("id", "=", userId).executeTakeFirst();
    return row?.email ?? null;
  }

  /** The account's row; the caller holds a session of it, so it exists. */
  userById(id: number) {
    return this.db.selectFrom("users").selectAll().where("id", "=", id).executeTakeFirstOrThrow();
  }
}

/** Short, non-reversible throttle keys: an email as typed can be 254 characters. */
export const accountKey = (email: string) => createHash("sha256").update(email).digest("hex").slice(0, 32);

export const iso = (ms: number | null) => (ms === null ? null : new Date(Number(ms)).toISOString());

export const withActor = (detail: string, actor: Actor | undefined) =>
  actor ? `${detail}, ip ${actor.ip}` : detail;
