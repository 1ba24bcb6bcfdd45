import type { Transaction } from "kysely";
import type { KeysDatabase } from "../store/schema.js";
import { hashPassword, verifyPassword } from "../crypto/passwords.js";
import { recoveryCodeHash } from "../crypto/recoveryCodes.js";
import { tokenHash } from "../crypto/secrets.js";
import { reserveAttempt } from "../throttle/attemptCounter.js";
import { accountKey, type KeysContext } from "./context.js";
import { KeysError, throttled } from "./errors.js";

/** Passwords shorter than this are refused (CLI and page alike). */
export const MIN_PASSWORD_LENGTH = 12;

/** The throttle key of re-authentication (password change, two-factor off): one budget per account. */
export const reauthKey = (userId: number) => `password:${userId}`;

/** A new password; every session of the account but `keepSession` ends. */
export async function replacePassword(
  ctx: KeysContext,
  userId: number,
  password: string,
  keepSession: string | undefined,
): Promise<void> {
  const hash = await hashPassword(password);
  await ctx.db.transaction().execute(async (tx) => {
    await tx.updateTable("users").set({ password_hash: hash }).where("id", "=", userId).execute();
    await endSessions(tx, userId, keepSession);
  });
}

/** Ends every session of the account but `keepSession` (every one without it); returns how many ended. */
export async function endSessions(
  tx: Transaction<KeysDatabase>,
  userId: number,
  keepSession?: string | undefined,
): Promise<number> {
  let sessions = tx.deleteFrom("sessions").where("user_id", "=", userId);
  if (keepSession) sessions = sessions.where("token_hash", "!=", tokenHash(keepSession));
  return Number((await sessions.executeTakeFirst()).numDeletedRows);
}

/** The account's recovery codes, replaced by `codes` (none: turned off), kept only as HMACs. */
export async function replaceRecoveryCodes(
  ctx: KeysContext,
  tx: Transaction<KeysDatabase>,
  userId: number,
  codes: string[],
): Promise<void> {
  await tx.deleteFrom("recovery_codes").where("user_id", "=", userId).execute();
  if (codes.length > 0)
    await tx
      .insertInto("recovery_codes")
      .values(
        codes.map((c) => ({
          code_hash: recoveryCodeHash(ctx.pepper, c),
          user_id: userId,
          used_at: null,
        })),
      )
      .execute();
}

/**
 * Re-authentication before a change to the account's security (a new password, two-factor on or off), throttled as
 * logins are: one budget per account for all such changes (5 attempts in the window), each attempt counted in the
 * database before the password is checked, a refusal already known answered from memory, and the check itself
 * through the hashing gate. `failed` records a wrong password, and the first refusal of a block, as the caller names
 * them. The caller clears the budget once the whole change has succeeded.
 */
export async function checkCurrentPassword(
  ctx: KeysContext,
  user: { id: number; email: string; password_hash: string },
  password: string,
  ip: string,
  failed: (why: "throttled" | "wrong password") => Promise<void>,
): Promise<void> {
  const key = reauthKey(user.id);
  const left = ctx.refusals.remaining(key, ctx.clock());
  if (left > 0) throw throttled(left);
  const now = ctx.clock();
  const reserved = await reserveAttempt(ctx.db, key, now, ctx.failureWindowMs);
  if (reserved.count > ctx.maxFailures) {
    const until = reserved.windowStart + ctx.failureWindowMs;
    if (ctx.refusals.remember(key, until, now)) await failed("throttled");
    throw throttled(until - now);
  }
  const slot = await ctx.gate.enter(accountKey(user.email), ip, "device");
  if ("refused" in slot) throw throttled(1_000, "too many attempts at once");
  try {
    if (!(await verifyPassword(password, user.password_hash))) {
      await failed("wrong password");
      throw new KeysError("invalid-credentials", "the current password is not correct");
    }
  } finally {
    slot.release();
  }
}
