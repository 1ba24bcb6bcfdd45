import { randomBytes } from "node:crypto";
import { isDeviceTokenFor, newDeviceToken } from "../crypto/deviceCookie.js";
import { dummyPasswordHash, hashPassword, needsRehash, verifyPassword } from "../crypto/passwords.js";
import { newSessionToken, tokenHash } from "../crypto/secrets.js";
import { clearAttempts, refundAttempt, reserveAttempt } from "../throttle/attemptCounter.js";
import type { GateLane } from "../throttle/hashingGate.js";
import { slowedLoginPath } from "../throttle/slowedLogin.js";
import { takeAccountSlot } from "../throttle/slowDown.js";
import { accountKey, type KeysContext } from "./context.js";
import { KeysError, slowedDown, throttled } from "./errors.js";
import { isKnownNetwork, rememberNetwork } from "./loginNetworks.js";
import { isCurrentCode, useLoginCode, useRecoveryCode } from "./twoFactorCodes.js";

/** Password checks made at once per account and address while the account is slowed down (see slowedLogin.ts). */
export const SLOWED_CHECKS_PER_ADDRESS = 2;

export interface SessionInfo {
  userId: number;
  twoFactorPending: boolean;
  /** The session's public id (as in the session list). */
  id: string;
}

/** Logging in and out, the second factor at login, and the session behind a cookie. */
export class Sessions {
  constructor(private readonly ctx: KeysContext) {}

  /**
   * Checks the password (same work and answer for an unknown email) and opens a new session: a fresh id at every
   * login, so a session id planted before login is worthless. Every attempt is counted before the password is
   * checked (per account and address pair, per address, and the per-account slow-down), and the checks running at once
   * are bounded, so neither a parallel burst nor guessing from many addresses gets past the limits. Nobody locks the
   * owner out: a browser that completed a login before (its device cookie) skips the per-account bounds, and while the
   * account is slowed down the right credentials still get in from anywhere (see throttle/slowedLogin.ts). A current
   * code given with the password completes both factors at once.
   */
  async login(
    email: string,
    password: string,
    ip: string,
    client: {
      deviceToken?: string | undefined;
      userAgent?: string | undefined;
      code?: string | undefined;
    } = {},
  ): Promise<{ token: string; twoFactorRequired: boolean; deviceToken: string | undefined }> {
    const { ctx } = this;
    const normalized = email.trim().toLowerCase();
    const account = accountKey(normalized);
    const deviceKey = isDeviceTokenFor(ctx.pepper, normalized, client.deviceToken)
      ? `device:${tokenHash(client.deviceToken ?? "").slice(0, 32)}`
      : undefined;
    const trusted = deviceKey !== undefined && !(await this.deviceSpent(deviceKey));
    const pairKey = `pair:${account}|${ip}`;
    const addressKey = `ip:${ip}`;
    const accountSlowKey = `account:${account}`;
    // A block already known costs no database write and no audit entry (see RefusalMemo).
    for (const key of [pairKey, addressKey]) {
      const left = ctx.refusals.remaining(key, ctx.clock());
      if (left > 0) throw throttled(left);
    }
    // What goes ahead of the guesses in the account's line (see GateLane): only the order, never the limits.
    const ahead =
      !trusted &&
      ((await isKnownNetwork(ctx, normalized, ip)) ||
        (client.code !== undefined && (await isCurrentCode(ctx, normalized, client.code))));
    const lane: GateLane = trusted ? "device" : ahead ? "ahead" : "other";
    const slot = await ctx.gate.enter(account, ip, lane);
    if ("refused" in slot)
      throw throttled(
        1_000,
        slot.refused === "busy" ? "too many logins at once" : "too many attempts at once",
      );
    try {
      const now = ctx.clock();
      const windows = [
        { key: pairKey, limit: ctx.maxFailures, scope: "pair" },
        { key: addressKey, limit: ctx.maxAddressFailures, scope: "address" },
      ] as const;
      for (const { key, limit, scope } of windows) {
        const attempts = await reserveAttempt(ctx.db, key, now, ctx.failureWindowMs);
        if (attempts.count > limit)
          return await this.refuseLogin(
            normalized,
            ip,
            key,
            attempts.windowStart + ctx.failureWindowMs,
            scope,
          );
      }
      // How long the account is slowed down for this attempt (0: it took an ordinary slot).
      let slowedMs = 0;
      if (trusted) await reserveAttempt(ctx.db, accountSlowKey, now, ctx.failureWindowMs);
      else {
        const known = ctx.refusals.remaining(accountSlowKey, now);
        const accountSlot =
          known > 0
            ? { ok: false as const, retryAfterMs: known }
            : await takeAccountSlot(ctx.db, accountSlowKey, now, ctx.slowDown);
        if (!accountSlot.ok) {
          slowedMs = accountSlot.retryAfterMs;
          if (ctx.refusals.remember(accountSlowKey, now + slowedMs, now))
            await ctx.audit(
              normalized.slice(0, 254),
              "login-throttled",
              `ip ${ip}, account slowed down until ${new Date(now + slowedMs).toISOString()}`,
            );
        }
      }
      const user = await ctx.db
        .selectFrom("users")
        .selectAll()
        .where("email", "=", normalized)
        .executeTakeFirst();
      const twoFactorOn = user !== undefined && user.totp_secret !== null;
      if (slowedMs > 0) {
        const addressChecks = twoFactorOn
          ? 0
          : (await reserveAttempt(ctx.db, `slowed:${account}|${ip}`, now, ctx.failureWindowMs)).count;
        const path = slowedLoginPath({
          twoFactor: twoFactorOn,
          codeGiven: client.code !== undefined,
          addressChecks,
          maxAddressChecks: SLOWED_CHECKS_PER_ADDRESS,
        });
        if (path === "refuse") throw slowedDown(slowedMs);
      }
      const ok = await verifyPassword(password, user?.password_hash ?? (await dummyPasswordHash()));
      if (!user || !ok || user.disabled === 1) {
        await ctx.audit(
          normalized.slice(0, 254),
          "login-failed",
          `ip ${ip}${slowedMs > 0 ? ", account slowed down" : ""}`,
        );
        // A device cookie that keeps failing stops being trusted (see deviceSpent).
        if (trusted) await reserveAttempt(ctx.db, deviceKey, now, ctx.failureWindowMs);
        if (slowedMs === 0)
          throw new KeysError("invalid-credentials", "the email or password is not correct");
        // Checked while slowed down: a failure like any other, answered as a refusal is, so it tells nothing.
        await reserveAttempt(ctx.db, accountSlowKey, now, ctx.failureWindowMs);
        throw slowedDown(slowedMs);
      }
      // A success is no failure: the attempts it reserved are taken back.
      await clearAttempts(ctx.db, pairKey);
      await refundAttempt(ctx.db, addressKey);
      if (slowedMs === 0) await refundAttempt(ctx.db, accountSlowKey);
      // The password is at hand only now: a hash from weaker parameters is replaced by one at today's.
      if (needsRehash(user.password_hash))
        await ctx.db
          .updateTable("users")
          .set({ password_hash: await hashPassword(password) })
          .where("id", "=", user.id)
          .execute();
      let twoFactorRequired = twoFactorOn;
      if (twoFactorOn && client.code !== undefined) {
        try {
          await useLoginCode(ctx, user, client.code, ip, trusted);
        } catch (error) {
          // While slowed down every failure looks the same, so a right password is not told apart from a wrong one.
          if (slowedMs > 0) throw slowedDown(slowedMs);
          throw error;
        }
        twoFactorRequired = false;
      }
      const token = await this.openSession(user.id, twoFactorRequired, ip, client.userAgent);
      if (!twoFactorRequired) await rememberNetwork(ctx, user, ip);
      const how = twoFactorRequired ? ", second factor owed" : twoFactorOn ? ", both factors" : "";
      await ctx.audit(user.email, "login", `ip ${ip}${how}${slowedMs > 0 ? ", account slowed down" : ""}`);
      return {
        token,
        twoFactorRequired,
        // Only a complete login marks the browser: a password alone earns no way past the slow-down.
        deviceToken: twoFactorRequired ? undefined : newDeviceToken(ctx.pepper, user.email),
      };
    } finally {
      slot.release();
    }
  }

  /**
   * A device cookie with `maxFailures` wrong passwords in the window is no longer trusted until the window ends
   * (OWASP's device cookie lockout): a copied cookie, or one on a browser a guesser shares, gives no way past the
   * slow-down. It is not refused either: its logins wait as a new browser's do, so the owner is not locked out.
   */
  private async deviceSpent(deviceKey: string): Promise<boolean> {
    const { ctx } = this;
    const row = await ctx.db
      .selectFrom("throttle")
      .select(["failures", "window_start"])
      .where("key", "=", deviceKey)
      .executeTakeFirst();
    return (
      row !== undefined &&
      Number(row.failures) >= ctx.maxFailures &&
      ctx.clock() - Number(row.window_start) < ctx.failureWindowMs
    );
  }

  /** Refuses a login until `until`; the first refusal of a block goes to the audit trail. */
  private async refuseLogin(
    email: string,
    ip: string,
    key: string,
    until: number,
    why: string,
  ): Promise<never> {
    const now = this.ctx.clock();
    if (this.ctx.refusals.remember(key, until, now))
      await this.ctx.audit(
        email.slice(0, 254),
        "login-throttled",
        `ip ${ip}, ${why}, refused until ${new Date(until).toISOString()}`,
      );
    throw throttled(until - now);
  }

  /** Completes the second factor: a valid code not used before; the session id is rotated. */
  async completeTwoFactor(
    token: string,
    proof: { code: string } | { recoveryCode: string },
    ip: string,
    userAgent?: string,
    deviceToken?: string,
  ): Promise<{ token: string; deviceToken: string | undefined }> {
    const { ctx } = this;
    const session = await this.session(token);
    if (!session) throw new KeysError("session-required", "log in first");
    const user = await ctx.userById(session.userId);
    if (!session.twoFactorPending || !user.totp_secret) return { token, deviceToken: undefined };
    const trusted = isDeviceTokenFor(ctx.pepper, user.email, deviceToken);
    if ("code" in proof) {
      await useLoginCode(ctx, user, proof.code, ip, trusted);
      await ctx.audit(user.email, "two-factor", `ip ${ip}`);
    } else {
      const left = await useRecoveryCode(ctx, user, proof.recoveryCode, ip);
      await ctx.audit(user.email, "two-factor", `ip ${ip}, recovery code, ${left} left`);
    }
    await ctx.db.deleteFrom("sessions").where("token_hash", "=", tokenHash(token)).execute();
    await rememberNetwork(ctx, user, ip);
    return {
      token: await this.openSession(user.id, false, ip, userAgent),
      deviceToken: newDeviceToken(ctx.pepper, user.email),
    };
  }

  async logout(token: string, ip?: string): Promise<void> {
    const row = await this.ctx.db
      .deleteFrom("sessions")
      .where("token_hash", "=", tokenHash(token))
      .returning("user_id")
      .executeTakeFirst();
    if (row) await this.ctx.audit(await this.ctx.emailOf(row.user_id), "logout", ip ? `ip ${ip}` : "");
  }

  /** The live session of a cookie, touched; expired sessions are deleted. */
  async session(token: string | undefined): Promise<SessionInfo | undefined> {
    if (!token) return undefined;
    const { ctx } = this;
    const hash = tokenHash(token);
    const row = await ctx.db
      .selectFrom("sessions")
      .selectAll()
      .where("token_hash", "=", hash)
      .executeTakeFirst();
    if (!row) return undefined;
    const now = ctx.clock();
    if (
      now - Number(row.last_seen_at) > ctx.idleTimeoutMs ||
      now - Number(row.created_at) > ctx.absoluteTimeoutMs
    ) {
      await ctx.db.deleteFrom("sessions").where("token_hash", "=", hash).execute();
      return undefined;
    }
    const user = await ctx.db
      .selectFrom("users")
      .select("disabled")
      .where("id", "=", row.user_id)
      .executeTakeFirst();
    if (!user || user.disabled === 1) return undefined;
    await ctx.db.updateTable("sessions").set({ last_seen_at: now }).where("token_hash", "=", hash).execute();
    return { userId: row.user_id, twoFactorPending: row.two_factor_pending === 1, id: row.id ?? "" };
  }

  private async openSession(
    userId: number,
    twoFactorPending: boolean,
    ip: string,
    userAgent: string | undefined,
  ): Promise<string> {
    const token = newSessionToken();
    const now = this.ctx.clock();
    await this.ctx.db
      .insertInto("sessions")
      .values({
        token_hash: tokenHash(token),
        id: randomBytes(8).toString("base64url"),
        user_id: userId,
        two_factor_pending: twoFactorPending ? 1 : 0,
        created_at: now,
        last_seen_at: now,
        ip: ip.slice(0, 64),
        user_agent: userAgent ? userAgent.slice(0, 255) : null,
      })
      .execute();
    return token;
  }
}
