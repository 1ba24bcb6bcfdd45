import { verifySync } from "otplib";
import { recoveryCodeHash } from "../crypto/recoveryCodes.js";
import { clearAttempts, refundAttempt, reserveAttempt } from "../throttle/attemptCounter.js";
import type { KeysContext } from "./context.js";
import { KeysError, throttled } from "./errors.js";

export type CodeFailure = "throttled" | "wrong code" | "code already used";

/** How a refused code at login or set-up is recorded. */
export const loginCodeFailure =
  (ctx: KeysContext, email: string, ip: string) =>
  (why: CodeFailure): Promise<void> =>
    ctx.audit(email, "two-factor-failed", why === "wrong code" ? `ip ${ip}` : `ip ${ip}, ${why}`);

/**
 * Whether `code` is a current code of the account not used yet, read without counting or using it: only to order the
 * account's line (a guesser with made-up codes waits its turn; the owner's code goes ahead). The code is checked again,
 * counted and used, after the password. What this tells a guesser (by how soon it is answered) is that a code was
 * current, which is no use without the password and lasts a time step.
 */
export async function isCurrentCode(ctx: KeysContext, email: string, code: string): Promise<boolean> {
  const user = await ctx.db
    .selectFrom("users")
    .select(["id", "totp_secret", "totp_last_step"])
    .where("email", "=", email)
    .executeTakeFirst();
  if (!user?.totp_secret) return false;
  const seed = ctx.seeds.open(user.totp_secret, user.id);
  if (!seed) return false;
  try {
    const result = verifySync({
      secret: seed,
      token: code,
      epoch: Math.floor(ctx.clock() / 1000),
      epochTolerance: 30,
    });
    if (!result.valid || !("timeStep" in result)) return false;
    return user.totp_last_step === null || Number(result.timeStep) > Number(user.totp_last_step);
  } catch {
    return false;
  }
}

/**
 * Checks a TOTP code against a sealed seed, the attempt counted first (5 in the window under `budget`, shared by every
 * replica and by every use of a code: login, set-up, turning it off), and returns its time step. A valid code used
 * already is refused without counting: it is no guess, and replaying the code that opened a session must not use up
 * the owner's budget. `failed` records a refusal in the audit trail as the caller names it.
 */
export async function acceptCode(
  ctx: KeysContext,
  userId: number,
  sealed: string,
  lastStep: number | null,
  code: string,
  failed: (why: CodeFailure) => Promise<void>,
  budget = `totp:${userId}`,
): Promise<number> {
  const now = ctx.clock();
  const seed = ctx.seeds.open(sealed, userId);
  const result = seed
    ? verifySync({ secret: seed, token: code, epoch: Math.floor(now / 1000), epochTolerance: 30 })
    : { valid: false };
  const step = result.valid && "timeStep" in result ? Number(result.timeStep) : undefined;
  // A valid code used already is known to whoever sends it: refused before the budget is touched, so no number of
  // replays, however parallel, spends it. Only a code that could open something is counted.
  if (step !== undefined && lastStep !== null && step <= Number(lastStep)) {
    await failed("code already used");
    throw new KeysError("invalid-two-factor-token", "the code is not valid, or was used already");
  }
  const reserved = await reserveAttempt(ctx.db, budget, now, ctx.failureWindowMs);
  if (reserved.count > ctx.maxFailures) {
    await failed("throttled");
    throw new KeysError("throttled", "too many attempts; try again later", {
      retryAfterSeconds: Math.max(1, Math.ceil((reserved.windowStart + ctx.failureWindowMs - now) / 1000)),
    });
  }
  if (step === undefined) {
    await failed("wrong code");
    throw new KeysError("invalid-two-factor-token", "the code is not valid, or was used already");
  }
  await clearAttempts(ctx.db, budget);
  return step;
}

/**
 * A code at login: checked against the account's budget, or, from a browser that completed a login before, against
 * a budget of its own (someone who has only the password cannot spend it), and its step recorded conditionally, so
 * two concurrent uses of one code cannot both pass.
 */
export async function useLoginCode(
  ctx: KeysContext,
  user: { id: number; email: string; totp_secret: string | null; totp_last_step: number | null },
  code: string,
  ip: string,
  trusted: boolean,
): Promise<void> {
  const budget = trusted ? `totp:${user.id}:trusted` : `totp:${user.id}`;
  const step = await acceptCode(
    ctx,
    user.id,
    user.totp_secret!,
    user.totp_last_step,
    code,
    loginCodeFailure(ctx, user.email, ip),
    budget,
  );
  const updated = await ctx.db
    .updateTable("users")
    .set({ totp_last_step: step })
    .where("id", "=", user.id)
    .where((eb) => eb.or([eb("totp_last_step", "is", null), eb("totp_last_step", "<", step)]))
    .executeTakeFirst();
  if (Number(updated.numUpdatedRows) !== 1) {
    // Lost a race with another use of the same code: a replay, not a guess.
    await refundAttempt(ctx.db, budget);
    await ctx.audit(user.email, "two-factor-failed", `ip ${ip}, code already used`);
    throw new KeysError("invalid-two-factor-token", "the code is not valid, or was used already");
  }
}

/**
 * A recovery code in place of the authenticator's: throttled on a budget of its own (5 in the window; the codes are
 * far too long to guess online), and marked used with a conditional update, so it works once even when two requests
 * race. Returns how many are left.
 */
export async function useRecoveryCode(
  ctx: KeysContext,
  user: { id: number; email: string },
  code: string,
  ip: string,
): Promise<number> {
  const now = ctx.clock();
  const budget = `recovery:${user.id}`;
  const reserved = await reserveAttempt(ctx.db, budget, now, ctx.failureWindowMs);
  if (reserved.count > ctx.maxFailures) {
    await ctx.audit(user.email, "two-factor-failed", `ip ${ip}, recovery code, throttled`);
    throw throttled(reserved.windowStart + ctx.failureWindowMs - now);
  }
  const used = await ctx.db
    .updateTable("recovery_codes")
    .set({ used_at: now })
    .where("code_hash", "=", recoveryCodeHash(ctx.pepper, code))
    .where("user_id", "=", user.id)
    .where("used_at", "is", null)
    .executeTakeFirst();
  if (Number(used.numUpdatedRows) !== 1) {
    await ctx.audit(user.email, "two-factor-failed", `ip ${ip}, wrong or used recovery code`);
    throw new KeysError("invalid-two-factor-token", "the recovery code is not valid, or was used already");
  }
  await clearAttempts(ctx.db, budget);
  const { n } = await ctx.db
    .selectFrom("recovery_codes")
    .select((eb) => eb.fn.countAll<number>().as("n"))
    .where("user_id", "=", user.id)
    .where("used_at", "is", null)
    .executeTakeFirstOrThrow();
  return Number(n);
}
