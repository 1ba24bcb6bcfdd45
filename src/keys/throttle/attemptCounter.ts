import { sql } from "kysely";
import type { Kysely } from "kysely";
import type { KeysDatabase } from "../store/schema.js";

/**
 * Counts attempts under a key in a fixed window, in the database so replicas share it. `reserve` counts the attempt
 * before it is evaluated, in one statement (an upsert that starts a new window when the old one has ended), so a
 * burst of parallel requests cannot all pass a check made before any of them is recorded.
 */
export async function reserveAttempt(
  db: Kysely<KeysDatabase>,
  key: string,
  now: number,
  windowMs: number,
): Promise<{ count: number; windowStart: number }> {
  const ended = now - windowMs;
  const row = await db
    .insertInto("throttle")
    .values({ key, failures: 1, window_start: now, last_at: now })
    .onConflict((oc) =>
      oc.column("key").doUpdateSet({
        failures: sql<number>`case when throttle.window_start <= ${ended} then 1 else throttle.failures + 1 end`,
        window_start: sql<number>`case when throttle.window_start <= ${ended} then ${now} else throttle.window_start end`,
        last_at: now,
      }),
    )
    .returning(["failures", "window_start"])
    .executeTakeFirstOrThrow();
  return { count: Number(row.failures), windowStart: Number(row.window_start) };
}

/** Takes back one reserved attempt (it turned out to be a success, which is no failure). */
export async function refundAttempt(db: Kysely<KeysDatabase>, key: string): Promise<void> {
  await db
    .updateTable("throttle")
    .set({ failures: sql<number>`case when failures > 0 then failures - 1 else 0 end` })
    .where("key", "=", key)
    .execute();
}

export async function clearAttempts(db: Kysely<KeysDatabase>, key: string): Promise<void> {
  await db.deleteFrom("throttle").where("key", "=", key).execute();
}
