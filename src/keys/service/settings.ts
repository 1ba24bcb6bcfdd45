import { generateSecret, generateURI } from "otplib";
import { newRecoveryCodes } from "../crypto/recoveryCodes.js";
import { clearAttempts } from "../throttle/attemptCounter.js";
import { iso, type Actor, type KeysContext } from "./context.js";
import {
  checkCurrentPassword,
  endSessions,
  reauthKey,
  replacePassword,
  replaceRecoveryCodes,
} from "./credentials.js";
import { KeysError, twoFactorNotOn } from "./errors.js";
import { MAX_ACTIVE_KEYS } from "./keyPairs.js";
import { acceptCode, loginCodeFailure } from "./twoFactorCodes.js";

/** Public session ids: 8 random bytes in base64url. */
const SESSION_ID = /^[A-Za-z0-9_-]{11}$/;

/** The account as its owner manages it on the page: who am I, my sessions, my password, two-factor on and off. */
export class AccountSettings {
  constructor(private readonly ctx: KeysContext) {}

  async me(userId: number): Promise<{ email: string; twoFactor: boolean; keyLimit: number }> {
    const user = await this.ctx.db
      .selectFrom("users")
      .select(["email", "totp_secret"])
      .where("id", "=", userId)
      .executeTakeFirstOrThrow();
    return { email: user.email, twoFactor: user.totp_secret !== null, keyLimit: MAX_ACTIVE_KEYS };
  }

  /** The account's sessions, the caller's marked; ids are public ids, never cookies. */
  async listSessions(userId: number, current: string) {
    const { ctx } = this;
    const rows = await ctx.db
      .selectFrom("sessions")
      .select(["id", "created_at", "last_seen_at", "ip", "user_agent", "two_factor_pending"])
      .where("user_id", "=", userId)
      .orderBy("last_seen_at", "desc")
      .execute();
    const now = ctx.clock();
    return rows
      .filter(
        (r) =>
          now - Number(r.last_seen_at) <= ctx.idleTimeoutMs &&
          now - Number(r.created_at) <= ctx.absoluteTimeoutMs,
      )
      .map((r) => ({
        id: r.id ?? "",
        createdAt: iso(r.created_at)!,
        lastSeenAt: iso(r.last_seen_at)!,
        ip: r.ip,
        userAgent: r.user_agent,
        twoFactorPending: r.two_factor_pending === 1,
        current: r.id === current,
      }));
  }

  async revokeSession(userId: number, id: string, actor: Actor): Promise<void> {
    // Not a session id (11 base64url characters) cannot be one: no query with whatever it holds.
    if (!SESSION_ID.test(id)) throw new KeysError("session-not-found", "no such session on this account");
    const result = await this.ctx.db
      .deleteFrom("sessions")
      .where("user_id", "=", userId)
      .where("id", "=", id)
      .executeTakeFirst();
    if (Number(result.numDeletedRows) !== 1)
      throw new KeysError("session-not-found", "no such session on this account");
    await this.ctx.audit(await this.ctx.emailOf(userId), "session-revoked", `ip ${actor.ip}`);
  }

  /** Changes the password after checking the current one (see checkCurrentPassword); other sessions end. */
  async changePassword(
    userId: number,
    current: string,
    next: string,
    keepSession: string,
    actor: Actor,
  ): Promise<void> {
    const user = await this.ctx.userById(userId);
    await checkCurrentPassword(this.ctx, user, current, actor.ip, async () => {});
    await clearAttempts(this.ctx.db, reauthKey(userId));
    await replacePassword(this.ctx, userId, next, keepSession);
    await this.ctx.audit(user.email, "password-changed", `ip ${actor.ip}`);
  }

  /**
   * Starts two-factor set-up from the page: a new seed, kept sealed until a code from it confirms it. It asks for the
   * password first (the re-authentication budget of the password change and of turning it off), so a session taken
   * over cannot enrol its taker's authenticator and then hold the account with it.
   */
  async startTwoFactorSetup(
    userId: number,
    password: string,
    actor: Actor,
  ): Promise<{ secret: string; uri: string }> {
    const { ctx } = this;
    const user = await ctx.userById(userId);
    if (user.totp_secret !== null)
      throw new KeysError("two-factor-already-enabled", "two-factor authentication is on already");
    await checkCurrentPassword(ctx, user, password, actor.ip, (why) =>
      ctx.audit(user.email, "two-factor-enable-failed", `ip ${actor.ip}, ${why}`),
    );
    await clearAttempts(ctx.db, reauthKey(userId));
    const secret = generateSecret();
    await ctx.db
      .updateTable("users")
      .set({ totp_pending: ctx.seeds.seal(secret, userId) })
      .where("id", "=", userId)
      .execute();
    return { secret, uri: generateURI({ issuer: "lightfleet", label: user.email, secret }) };
  }

  /**
   * Confirms the set-up with a code from the new seed: two-factor authentication is on, every other session of the
   * account ends (it raises what a login needs; sessions opened under the old rule should not outlive it), and ten
   * recovery codes are returned, shown this once and kept only as HMACs.
   */
  async confirmTwoFactorSetup(
    userId: number,
    code: string,
    keepSession: string,
    actor: Actor,
  ): Promise<{ recoveryCodes: string[] }> {
    const { ctx } = this;
    const user = await ctx.userById(userId);
    if (user.totp_secret !== null)
      throw new KeysError("two-factor-already-enabled", "two-factor authentication is on already");
    if (user.totp_pending === null)
      throw new KeysError("two-factor-setup-required", "start the two-factor set-up first");
    const step = await acceptCode(
      ctx,
      userId,
      user.totp_pending,
      null,
      code,
      loginCodeFailure(ctx, user.email, actor.ip),
    );
    const recoveryCodes = newRecoveryCodes();
    const ended = await ctx.db.transaction().execute(async (tx) => {
      const on = await tx
        .updateTable("users")
        .set({ totp_secret: user.totp_pending, totp_pending: null, totp_last_step: step })
        .where("id", "=", userId)
        .where("totp_pending", "=", user.totp_pending)
        .executeTakeFirst();
      if (Number(on.numUpdatedRows) !== 1) return undefined;
      await replaceRecoveryCodes(ctx, tx, userId, recoveryCodes);
      return endSessions(tx, userId, keepSession);
    });
    if (ended === undefined)
      throw new KeysError("two-factor-setup-required", "start the two-factor set-up first");
    await ctx.audit(
      user.email,
      "two-factor-enabled",
      `ip ${actor.ip}, ${ended} other session${ended === 1 ? "" : "s"} ended`,
    );
    return { recoveryCodes };
  }

  /**
   * Turns two-factor authentication off from a session. A downgrade of the account's protection, so it asks what a
   * login asks: the current password, checked first (so the code budget, which logins share, is spent only by someone
   * who knows it), and a code not used before (not the one that opened this session). Every other session of the
   * account ends, as after a password change: whoever holds one is asked to log in again under the new rule; this
   * session stays. Each refusal and the change go to the account's audit trail.
   */
  async turnOffTwoFactor(
    userId: number,
    password: string,
    code: string,
    keepSession: string,
    actor: Actor,
  ): Promise<void> {
    const { ctx } = this;
    const user = await ctx.userById(userId);
    const seed = user.totp_secret;
    if (seed === null) throw twoFactorNotOn();
    const failed = (why: string) =>
      ctx.audit(user.email, "two-factor-disable-failed", `ip ${actor.ip}, ${why}`);
    await checkCurrentPassword(ctx, user, password, actor.ip, failed);
    await acceptCode(ctx, userId, seed, user.totp_last_step, code, failed);
    const ended = await ctx.db.transaction().execute(async (tx) => {
      // Conditional on the seed checked, so a set-up finished meanwhile is not undone unseen.
      const off = await tx
        .updateTable("users")
        .set({ totp_secret: null, totp_pending: null, totp_last_step: null })
        .where("id", "=", userId)
        .where("totp_secret", "=", seed)
        .executeTakeFirst();
      if (Number(off.numUpdatedRows) !== 1) return undefined;
      await replaceRecoveryCodes(ctx, tx, userId, []);
      return endSessions(tx, userId, keepSession);
    });
    if (ended === undefined) throw twoFactorNotOn();
    await clearAttempts(ctx.db, reauthKey(userId));
    await ctx.audit(
      user.email,
      "two-factor-disabled",
      `ip ${actor.ip}, ${ended} other session${ended === 1 ? "" : "s"} ended`,
    );
  }
}
