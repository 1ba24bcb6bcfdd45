import type { Kysely } from "kysely";
import type { KeysDatabase } from "../store/schema.js";

export interface SlowDownPolicy {
  /** Failures on an account within the window before attempts on it are spaced out. */
  after: number;
  /** The spacing past the threshold: doubling per failure from this, up to `maxDelayMs`. */
  baseDelayMs: number;
  maxDelayMs: number;
  windowMs: number;
}

/** How long after the previous attempt on an account the next may be evaluated, given its failures so far. */
export function slowDownDelayMs(failures: number, policy: SlowDownPolicy): number {
  if (failures < policy.after) return 0;
  return Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** Math.min(30, failures - policy.after));
}

export type SlotResult = { ok: true } | { ok: false; retryAfterMs: number };

/**
 * The per-account slow-down (OWASP): once an account has had `after` failures in the window, from any addresses,
 * attempts on it are evaluated at most one per delay, the delay growing with the failures. Nobody is locked out for
 * the window, but guessing from many addresses gets a handful of tries where it would get thousands. The slot is taken
 * with a compare-and-set on the row, so replicas sharing the database cannot hand it out twice.
 */
export async function takeAccountSlot(
  db: Kysely<KeysDatabase>,
  key: string,
  now: number,
  policy: SlowDownPolicy,
): Promise<SlotResult> {
  for (let attempt = 0; attempt < 5; attempt++) {
    const row = await db.selectFrom("throttle").selectAll().where("key", "=", key).executeTakeFirst();
    if (!row) {
      const inserted = await db
        .insertInto("throttle")
        .values({ key, failures: 1, window_start: now, last_at: now })
        .onConflict((oc) => oc.column("key").doNothing())
        .returning("key")
        .executeTakeFirst();
      if (inserted) return { ok: true };
      continue;
    }
    const failures = Number(row.failures);
    const windowStart = Number(row.window_start);
    const expired = now - windowStart >= policy.windowMs;
    const wait = expired ? 0 : Number(row.last_at ?? 0) + slowDownDelayMs(failures, policy) - now;
    if (wait > 0) return { ok: false, retryAfterMs: wait };
    const taken = await db
      .updateTable("throttle")
      .set({ failures: expired ? 1 : failures + 1, window_start: expired ? now : windowStart, last_at: now })
      .where("key", "=", key)
      .where("failures", "=", failures)
      .where("window_start", "=", windowStart)
      .executeTakeFirst();
    if (Number(taken.numUpdatedRows) === 1) return { ok: true };
  }
  // Lost the race to concurrent attempts five times: this account is busy being tried.
  return { ok: false, retryAfterMs: 1000 };
}
