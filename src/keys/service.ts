import { createHash, randomBytes } from "node:crypto";
import { availableParallelism } from "node:os";
import { generateSecret, generateURI, verifySync } from "otplib";
import type { KeyStore } from "./store/database.js";
import type { Transaction } from "kysely";
import type { AuditEvent, KeysDatabase } from "./store/schema.js";
import { isDeviceTokenFor, newDeviceToken } from "./crypto/deviceCookie.js";
import { dummyPasswordHash, hashPassword, needsRehash, verifyPassword } from "./crypto/passwords.js";
import { newRecoveryCodes, recoveryCodeHash } from "./crypto/recoveryCodes.js";
import { SeedCipher } from "./crypto/seedCipher.js";
import { clearAttempts, refundAttempt, reserveAttempt } from "./throttle/attemptCounter.js";
import { HashingGate } from "./throttle/hashingGate.js";
import { RefusalMemo } from "./throttle/refusalMemo.js";
import type { HashingGateLimits } from "./throttle/hashingGate.js";
import { slowedLoginPath } from "./throttle/slowedLogin.js";
import { takeAccountSlot } from "./throttle/slowDown.js";
import type { SlowDownPolicy } from "./throttle/slowDown.js";
import {
  ACCESS_KEY_ID,
  newAccessKeyId,
  newSecret,
  newSessionToken,
  sameHash,
  secretHash,
  tokenHash,
} from "./crypto/secrets.js";

/** How stale lastUsedAt may be; it is rewritten at most once per this interval. */
export const LAST_USED_RESOLUTION_MS = 60_000;

/** At most this many key pairs per account, Active and Inactive alike (as AWS's AccessKeysPerUser quota). */
export const MAX_ACTIVE_KEYS = 2;

/** Password checks made at once per account and address while the account is slowed down (see slowedLogin.ts). */
export const SLOWED_CHECKS_PER_ADDRESS = 2;

/** Passwords shorter than this are refused (CLI and page alike). */
export const MIN_PASSWORD_LENGTH = 12;

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

/** A failure the HTTP layer turns into a problem answer; `code` is stable and machine-readable. */
export class KeysError extends Error {
  constructor(
    readonly code:
      | "invalid-credentials"
      | "two-factor-required"
      | "invalid-two-factor-token"
      | "session-required"
      | "key-limit-exceeded"
      | "key-not-found"
      | "session-not-found"
      | "two-factor-already-enabled"
      | "two-factor-setup-required"
      | "two-factor-not-enabled"
      | "throttled",
    message: string,
    readonly extra: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = "KeysError";
  }
}

export interface SessionInfo {
  userId: number;
  twoFactorPending: boolean;
  /** The session's public id (as in the session list). */
  id: string;
}

export type KeyStatus = "Active" | "Inactive";

export interface KeyPairView {
  accessKeyId: string;
  status: KeyStatus;
  createdAt: string;
  lastUsedAt: string | null;
}

/** What the page shows of a pair: the contract's fields and the owner's name for it. */
export interface OwnKeyPairView extends KeyPairView {
  name: string | null;
}

/** Who and where a state change came from, for the audit trail. */
export interface Actor {
  ip: string;
}

/** Short, non-reversible throttle keys: an email as typed can be 254 characters. */
const accountKey = (email: string) => createHash("sha256").update(email).digest("hex").slice(0, 32);

const iso = (ms: number | null) => (ms === null ? null : new Date(Number(ms)).toISOString());

/**
 * The key API's rules, apart from HTTP: accounts, sessions with a second factor, throttled logins, and key pairs of
 * which at most two are active per account. Every time comes from the injected clock.
 */
export class KeysService {
  private readonly clock: () => number;
  private readonly idleTimeoutMs: number;
  private readonly absoluteTimeoutMs: number;
  private readonly maxFailures: number;
  private readonly maxAddressFailures: number;
  private readonly failureWindowMs: number;
  private readonly slowDown: SlowDownPolicy;
  private readonly gate: HashingGate;
  private readonly seeds: SeedCipher;
  private readonly refusals = new RefusalMemo();

  constructor(private readonly options: KeysServiceOptions) {
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
    // scrypt runs on libuv's thread pool (4 threads by default): more at once only queue there, unfairly. Past 8 in
    // flight, attempts on one account wait in its own line: the owner's waits its turn rather than being refused, and
    // one account's guessers hold no more than 8 places of the shared queue.
    this.gate = new HashingGate({
      perAccount: 8,
      accountQueue: 256,
      perAddress: 2,
      total: Math.min(4, Math.max(2, availableParallelism())),
      queue: 64,
      ...options.hashing,
    });
    this.seeds = new SeedCipher(options.seedKey);
  }

  private get db() {
    return this.options.store.db;
  }

  // --- accounts (CLI) ---

  async addUser(email: string, password: string): Promise<void> {
    const normalized = email.trim().toLowerCase();
    const existing = await this.db
      .selectFrom("users")
      .select("id")
      .where("email", "=", normalized)
      .executeTakeFirst();
    if (existing) throw new Error(`an account for ${normalized} exists already`);
    await this.db
      .insertInto("users")
      .values({
        email: normalized,
        password_hash: await hashPassword(password),
        totp_secret: null,
        totp_pending: null,
        totp_last_step: null,
        disabled: 0,
        created_at: this.clock(),
      })
      .execute();
    await this.audit(normalized, "user-added", "by cli");
  }

  async listUsers(): Promise<
    Array<{ email: string; twoFactor: boolean; disabled: boolean; activeKeys: number }>
  > {
    const users = await this.db
      .selectFrom("users")
      .select(["id", "email", "totp_secret", "disabled"])
      .orderBy("email")
      .execute();
    const counts = await this.db
      .selectFrom("key_pairs")
      .select(["user_id", (eb) => eb.fn.countAll<number>().as("n")])
      .where("status", "=", "Active")
      .groupBy("user_id")
      .execute();
    const byUser = new Map(counts.map((c) => [c.user_id, Number(c.n)]));
    return users.map((u) => ({
      email: u.email,
      twoFactor: u.totp_secret !== null,
      disabled: u.disabled === 1,
      activeKeys: byUser.get(u.id) ?? 0,
    }));
  }

  /** Enables TOTP: returns the secret and the otpauth:// URI, shown once to the person enrolling. */
  async enableTwoFactor(email: string): Promise<{ secret: string; uri: string }> {
    const user = await this.requireUser(email);
    const secret = generateSecret();
    await this.db
      .updateTable("users")
      .set({ totp_secret: this.seeds.seal(secret, user.id), totp_pending: null, totp_last_step: null })
      .where("id", "=", user.id)
      .execute();
    await this.audit(user.email, "two-factor-enabled", "by cli");
    return { secret, uri: generateURI({ issuer: "lightfleet", label: user.email, secret }) };
  }

  /**
   * Turns TOTP off for an owner who lost the authenticator. Every session of the account ends, as when the owner turns
   * it off from the page: sessions opened under the old rule (perhaps by whoever holds the authenticator now) do not
   * outlive it.
   */
  async disableTwoFactor(email: string): Promise<void> {
    const user = await this.requireUser(email);
    const ended = await this.db.transaction().execute(async (tx) => {
      await tx
        .updateTable("users")
        .set({ totp_secret: null, totp_pending: null, totp_last_step: null })
        .where("id", "=", user.id)
        .execute();
      await this.replaceRecoveryCodes(tx, user.id, []);
      const deleted = await tx.deleteFrom("sessions").where("user_id", "=", user.id).executeTakeFirst();
      return Number(deleted.numDeletedRows);
    });
    await this.audit(
      user.email,
      "two-factor-disabled",
      `by cli, ${ended} session${ended === 1 ? "" : "s"} ended`,
    );
  }

  /** Disables an account: its sessions end and its keys stop working. */
  async disableUser(email: string): Promise<void> {
    const user = await this.requireUser(email);
    await this.db.transaction().execute(async (tx) => {
      await tx.updateTable("users").set({ disabled: 1 }).where("id", "=", user.id).execute();
      await tx.deleteFrom("sessions").where("user_id", "=", user.id).execute();
    });
    await this.audit(user.email, "user-disabled", "by cli");
  }

  /** Enables a disabled account again: it can log in, and its active pairs work again. */
  async enableUser(email: string): Promise<void> {
    const user = await this.requireUser(email);
    await this.db.updateTable("users").set({ disabled: 0 }).where("id", "=", user.id).execute();
    await this.audit(user.email, "user-enabled", "by cli");
  }

  /** Sets a new password from the CLI; every session of the account ends. */
  async setPassword(email: string, password: string): Promise<void> {
    const user = await this.requireUser(email);
    if (password.length < MIN_PASSWORD_LENGTH)
      throw new Error(`the password must be at least ${MIN_PASSWORD_LENGTH} characters`);
    await this.replacePassword(user.id, password, undefined);
    await this.audit(user.email, "password-changed", "by cli");
  }

  /** Seals TOTP seeds stored in clear by earlier releases (run at start; a no-op once done). */
  async sealClearSeeds(): Promise<number> {
    const rows = await this.db
      .selectFrom("users")
      .select(["id", "totp_secret"])
      .where("totp_secret", "is not", null)
      .execute();
    let sealed = 0;
    for (const row of rows) {
      if (row.totp_secret === null || SeedCipher.isSealed(row.totp_secret)) continue;
      await this.db
        .updateTable("users")
        .set({ totp_secret: this.seeds.seal(row.totp_secret, row.id) })
        .where("id", "=", row.id)
        .where("totp_secret", "=", row.totp_secret)
        .execute();
      sealed++;
    }
    return sealed;
  }

  private async requireUser(email: string) {
    const user = await this.db
      .selectFrom("users")
      .selectAll()
      .where("email", "=", email.trim().toLowerCase())
      .executeTakeFirst();
    if (!user) throw new Error(`no account for ${email}`);
    return user;
  }

  // --- sessions ---

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
    const normalized = email.trim().toLowerCase();
    const account = accountKey(normalized);
    const trusted = isDeviceTokenFor(this.options.pepper, normalized, client.deviceToken);
    const pairKey = `pair:${account}|${ip}`;
    const addressKey = `ip:${ip}`;
    const accountSlowKey = `account:${account}`;
    // A block already known costs no database write and no audit entry (see RefusalMemo).
    for (const key of [pairKey, addressKey]) {
      const left = this.refusals.remaining(key, this.clock());
      if (left > 0) throw throttled(left);
    }
    const slot = await this.gate.enter(account, ip, trusted);
    if ("refused" in slot)
      throw throttled(
        1_000,
        slot.refused === "busy" ? "too many logins at once" : "too many attempts at once",
      );
    try {
      const now = this.clock();
      const windows = [
        { key: pairKey, limit: this.maxFailures, scope: "pair" },
        { key: addressKey, limit: this.maxAddressFailures, scope: "address" },
      ] as const;
      for (const { key, limit, scope } of windows) {
        const attempts = await reserveAttempt(this.db, key, now, this.failureWindowMs);
        if (attempts.count > limit)
          return await this.refuseLogin(
            normalized,
            ip,
            key,
            attempts.windowStart + this.failureWindowMs,
            scope,
          );
      }
      // How long the account is slowed down for this attempt (0: it took an ordinary slot).
      let slowedMs = 0;
      if (trusted) await reserveAttempt(this.db, accountSlowKey, now, this.failureWindowMs);
      else {
        const known = this.refusals.remaining(accountSlowKey, now);
        const accountSlot =
          known > 0
            ? { ok: false as const, retryAfterMs: known }
            : await takeAccountSlot(this.db, accountSlowKey, now, this.slowDown);
        if (!accountSlot.ok) {
          slowedMs = accountSlot.retryAfterMs;
          if (this.refusals.remember(accountSlowKey, now + slowedMs, now))
            await this.audit(
              normalized.slice(0, 254),
              "login-throttled",
              `ip ${ip}, account slowed down until ${new Date(now + slowedMs).toISOString()}`,
            );
        }
      }
      const user = await this.db
        .selectFrom("users")
        .selectAll()
        .where("email", "=", normalized)
        .executeTakeFirst();
      const twoFactorOn = user !== undefined && user.totp_secret !== null;
      if (slowedMs > 0) {
        const addressChecks = twoFactorOn
          ? 0
          : (await reserveAttempt(this.db, `slowed:${account}|${ip}`, now, this.failureWindowMs)).count;
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
        await this.audit(
          normalized.slice(0, 254),
          "login-failed",
          `ip ${ip}${slowedMs > 0 ? ", account slowed down" : ""}`,
        );
        if (slowedMs === 0)
          throw new KeysError("invalid-credentials", "the email or password is not correct");
        // Checked while slowed down: a failure like any other, answered as a refusal is, so it tells nothing.
        await reserveAttempt(this.db, accountSlowKey, now, this.failureWindowMs);
        throw slowedDown(slowedMs);
      }
      // A success is no failure: the attempts it reserved are taken back.
      await clearAttempts(this.db, pairKey);
      await refundAttempt(this.db, addressKey);
      if (slowedMs === 0) await refundAttempt(this.db, accountSlowKey);
      // The password is at hand only now: a hash from weaker parameters is replaced by one at today's.
      if (needsRehash(user.password_hash))
        await this.db
          .updateTable("users")
          .set({ password_hash: await hashPassword(password) })
          .where("id", "=", user.id)
          .execute();
      let twoFactorRequired = twoFactorOn;
      if (twoFactorOn && client.code !== undefined) {
        try {
          await this.useLoginCode(user, client.code, ip, trusted);
        } catch (error) {
          // While slowed down every failure looks the same, so a right password is not told apart from a wrong one.
          if (slowedMs > 0) throw slowedDown(slowedMs);
          throw error;
        }
        twoFactorRequired = false;
      }
      const token = await this.openSession(user.id, twoFactorRequired, ip, client.userAgent);
      const how = twoFactorRequired ? ", second factor owed" : twoFactorOn ? ", both factors" : "";
      await this.audit(user.email, "login", `ip ${ip}${how}${slowedMs > 0 ? ", account slowed down" : ""}`);
      return {
        token,
        twoFactorRequired,
        // Only a complete login marks the browser: a password alone earns no way past the slow-down.
        deviceToken: twoFactorRequired ? undefined : newDeviceToken(this.options.pepper, user.email),
      };
    } finally {
      slot.release();
    }
  }

  /** Refuses a login until `until`; the first refusal of a block goes to the audit trail. */
  private async refuseLogin(
    email: string,
    ip: string,
    key: string,
    until: number,
    why: string,
  ): Promise<never> {
    const now = this.clock();
    if (this.refusals.remember(key, until, now))
      await this.audit(
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
    const session = await this.session(token);
    if (!session) throw new KeysError("session-required", "log in first");
    const user = await this.userById(session.userId);
    if (!session.twoFactorPending || !user.totp_secret) return { token, deviceToken: undefined };
    const trusted = isDeviceTokenFor(this.options.pepper, user.email, deviceToken);
    if ("code" in proof) {
      await this.useLoginCode(user, proof.code, ip, trusted);
      await this.audit(user.email, "two-factor", `ip ${ip}`);
    } else {
      const left = await this.useRecoveryCode(user, proof.recoveryCode, ip);
      await this.audit(user.email, "two-factor", `ip ${ip}, recovery code, ${left} left`);
    }
    await this.db.deleteFrom("sessions").where("token_hash", "=", tokenHash(token)).execute();
    return {
      token: await this.openSession(user.id, false, ip, userAgent),
      deviceToken: newDeviceToken(this.options.pepper, user.email),
    };
  }

  /**
   * A code at login: checked against the account's budget, or, from a browser that completed a login before, against
   * a budget of its own (someone who has only the password cannot spend it), and its step recorded conditionally, so
   * two concurrent uses of one code cannot both pass.
   */
  private async useLoginCode(
    user: { id: number; email: string; totp_secret: string | null; totp_last_step: number | null },
    code: string,
    ip: string,
    trusted: boolean,
  ): Promise<void> {
    const step = await this.acceptCode(
      user.id,
      user.totp_secret!,
      user.totp_last_step,
      code,
      loginCodeFailure(this, user.email, ip),
      trusted ? `totp:${user.id}:trusted` : `totp:${user.id}`,
    );
    const updated = await this.db
      .updateTable("users")
      .set({ totp_last_step: step })
      .where("id", "=", user.id)
      .where((eb) => eb.or([eb("totp_last_step", "is", null), eb("totp_last_step", "<", step)]))
      .executeTakeFirst();
    if (Number(updated.numUpdatedRows) !== 1) {
      // Lost a race with another use of the same code: a replay, not a guess.
      await refundAttempt(this.db, trusted ? `totp:${user.id}:trusted` : `totp:${user.id}`);
      await this.audit(user.email, "two-factor-failed", `ip ${ip}, code already used`);
      throw new KeysError("invalid-two-factor-token", "the code is not valid, or was used already");
    }
  }

  /**
   * Checks a TOTP code against a sealed seed, the attempt counted first (5 in the window under `budget`, shared by every
   * replica and by every use of a code: login, set-up, turning it off), and returns its time step. A valid code used
   * already is refused without counting: it is no guess, and replaying the code that opened a session must not use up
   * the owner's budget. `failed` records a refusal in the audit trail as the caller names it.
   */
  private async acceptCode(
    userId: number,
    sealed: string,
    lastStep: number | null,
    code: string,
    failed: (why: "throttled" | "wrong code" | "code already used") => Promise<void>,
    budget = `totp:${userId}`,
  ): Promise<number> {
    const now = this.clock();
    const seed = this.seeds.open(sealed, userId);
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
    const reserved = await reserveAttempt(this.db, budget, now, this.failureWindowMs);
    if (reserved.count > this.maxFailures) {
      await failed("throttled");
      throw new KeysError("throttled", "too many attempts; try again later", {
        retryAfterSeconds: Math.max(1, Math.ceil((reserved.windowStart + this.failureWindowMs - now) / 1000)),
      });
    }
    if (step === undefined) {
      await failed("wrong code");
      throw new KeysError("invalid-two-factor-token", "the code is not valid, or was used already");
    }
    await clearAttempts(this.db, budget);
    return step;
  }

  async logout(token: string, ip?: string): Promise<void> {
    const row = await this.db
      .deleteFrom("sessions")
      .where("token_hash", "=", tokenHash(token))
      .returning("user_id")
      .executeTakeFirst();
    if (row) await this.audit(await this.emailOf(row.user_id), "logout", ip ? `ip ${ip}` : "");
  }

  /** The live session of a cookie, touched; expired sessions are deleted. */
  async session(token: string | undefined): Promise<SessionInfo | undefined> {
    if (!token) return undefined;
    const hash = tokenHash(token);
    const row = await this.db
      .selectFrom("sessions")
      .selectAll()
      .where("token_hash", "=", hash)
      .executeTakeFirst();
    if (!row) return undefined;
    const now = this.clock();
    if (
      now - Number(row.last_seen_at) > this.idleTimeoutMs ||
      now - Number(row.created_at) > this.absoluteTimeoutMs
    ) {
      await this.db.deleteFrom("sessions").where("token_hash", "=", hash).execute();
      return undefined;
    }
    const user = await this.db
      .selectFrom("users")
      .select("disabled")
      .where("id", "=", row.user_id)
      .executeTakeFirst();
    if (!user || user.disabled === 1) return undefined;
    await this.db.updateTable("sessions").set({ last_seen_at: now }).where("token_hash", "=", hash).execute();
    return { userId: row.user_id, twoFactorPending: row.two_factor_pending === 1, id: row.id ?? "" };
  }

  private async openSession(
    userId: number,
    twoFactorPending: boolean,
    ip: string,
    userAgent: string | undefined,
  ): Promise<string> {
    const token = newSessionToken();
    const now = this.clock();
    await this.db
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

  // --- the account, for the page ---

  async me(userId: number): Promise<{ email: string; twoFactor: boolean; keyLimit: number }> {
    const user = await this.db
      .selectFrom("users")
      .select(["email", "totp_secret"])
      .where("id", "=", userId)
      .executeTakeFirstOrThrow();
    return { email: user.email, twoFactor: user.totp_secret !== null, keyLimit: MAX_ACTIVE_KEYS };
  }

  /** The account's sessions, the caller's marked; ids are public ids, never cookies. */
  async listSessions(userId: number, current: string) {
    const rows = await this.db
      .selectFrom("sessions")
      .select(["id", "created_at", "last_seen_at", "ip", "user_agent", "two_factor_pending"])
      .where("user_id", "=", userId)
      .orderBy("last_seen_at", "desc")
      .execute();
    const now = this.clock();
    return rows
      .filter(
        (r) =>
          now - Number(r.last_seen_at) <= this.idleTimeoutMs &&
          now - Number(r.created_at) <= this.absoluteTimeoutMs,
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
    const result = await this.db
      .deleteFrom("sessions")
      .where("user_id", "=", userId)
      .where("id", "=", id)
      .executeTakeFirst();
    if (Number(result.numDeletedRows) !== 1)
      throw new KeysError("session-not-found", "no such session on this account");
    await this.audit(await this.emailOf(userId), "session-revoked", `ip ${actor.ip}`);
  }

  /** Changes the password after checking the current one (see checkCurrentPassword); other sessions end. */
  async changePassword(
    userId: number,
    current: string,
    next: string,
    keepSession: string,
    actor: Actor,
  ): Promise<void> {
    const user = await this.userById(userId);
    await this.checkCurrentPassword(user, current, actor.ip, async () => {});
    await clearAttempts(this.db, reauthKey(userId));
    await this.replacePassword(userId, next, keepSession);
    await this.audit(user.email, "password-changed", `ip ${actor.ip}`);
  }

  /** The account's row; the caller holds a session of it, so it exists. */
  private userById(id: number) {
    return this.db.selectFrom("users").selectAll().where("id", "=", id).executeTakeFirstOrThrow();
  }

  /**
   * Re-authentication before a change to the account's security (a new password, two-factor off), throttled as
   * logins are: one budget per account for all such changes (5 attempts in the window), each attempt counted in the
   * database before the password is checked, a refusal already known answered from memory, and the check itself
   * through the hashing gate. `failed` records a wrong password, and the first refusal of a block, as the caller names
   * them. The caller clears the budget once the whole change has succeeded.
   */
  private async checkCurrentPassword(
    user: { id: number; email: string; password_hash: string },
    password: string,
    ip: string,
    failed: (why: "throttled" | "wrong password") => Promise<void>,
  ): Promise<void> {
    const key = reauthKey(user.id);
    const left = this.refusals.remaining(key, this.clock());
    if (left > 0) throw throttled(left);
    const now = this.clock();
    const reserved = await reserveAttempt(this.db, key, now, this.failureWindowMs);
    if (reserved.count > this.maxFailures) {
      const until = reserved.windowStart + this.failureWindowMs;
      if (this.refusals.remember(key, until, now)) await failed("throttled");
      throw throttled(until - now);
    }
    const slot = await this.gate.enter(accountKey(user.email), ip, true);
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

  private async replacePassword(userId: number, password: string, keepSession: string | undefined) {
    const hash = await hashPassword(password);
    await this.db.transaction().execute(async (tx) => {
      await tx.updateTable("users").set({ password_hash: hash }).where("id", "=", userId).execute();
      let others = tx.deleteFrom("sessions").where("user_id", "=", userId);
      if (keepSession) others = others.where("token_hash", "!=", tokenHash(keepSession));
      await others.execute();
    });
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
    const user = await this.userById(userId);
    if (user.totp_secret !== null)
      throw new KeysError("two-factor-already-enabled", "two-factor authentication is on already");
    await this.checkCurrentPassword(user, password, actor.ip, (why) =>
      this.audit(user.email, "two-factor-enable-failed", `ip ${actor.ip}, ${why}`),
    );
    await clearAttempts(this.db, reauthKey(userId));
    const secret = generateSecret();
    await this.db
      .updateTable("users")
      .set({ totp_pending: this.seeds.seal(secret, userId) })
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
    const user = await this.userById(userId);
    if (user.totp_secret !== null)
      throw new KeysError("two-factor-already-enabled", "two-factor authentication is on already");
    if (user.totp_pending === null)
      throw new KeysError("two-factor-setup-required", "start the two-factor set-up first");
    const step = await this.acceptCode(
      userId,
      user.totp_pending,
      null,
      code,
      loginCodeFailure(this, user.email, actor.ip),
    );
    const recoveryCodes = newRecoveryCodes();
    const ended = await this.db.transaction().execute(async (tx) => {
      const on = await tx
        .updateTable("users")
        .set({ totp_secret: user.totp_pending, totp_pending: null, totp_last_step: step })
        .where("id", "=", userId)
        .where("totp_pending", "=", user.totp_pending)
        .executeTakeFirst();
      if (Number(on.numUpdatedRows) !== 1) return undefined;
      await this.replaceRecoveryCodes(tx, userId, recoveryCodes);
      const others = await tx
        .deleteFrom("sessions")
        .where("user_id", "=", userId)
        .where("token_hash", "!=", tokenHash(keepSession))
        .executeTakeFirst();
      return Number(others.numDeletedRows);
    });
    if (ended === undefined)
      throw new KeysError("two-factor-setup-required", "start the two-factor set-up first");
    await this.audit(
      user.email,
      "two-factor-enabled",
      `ip ${actor.ip}, ${ended} other session${ended === 1 ? "" : "s"} ended`,
    );
    return { recoveryCodes };
  }

  private async replaceRecoveryCodes(tx: Transaction<KeysDatabase>, userId: number, codes: string[]) {
    await tx.deleteFrom("recovery_codes").where("user_id", "=", userId).execute();
    if (codes.length > 0)
      await tx
        .insertInto("recovery_codes")
        .values(
          codes.map((c) => ({
            code_hash: recoveryCodeHash(this.options.pepper, c),
            user_id: userId,
            used_at: null,
          })),
        )
        .execute();
  }

  /**
   * A recovery code in place of the authenticator's: throttled on a budget of its own (5 in the window; the codes are
   * far too long to guess online), and marked used with a conditional update, so it works once even when two requests
   * race. Returns how many are left.
   */
  private async useRecoveryCode(
    user: { id: number; email: string },
    code: string,
    ip: string,
  ): Promise<number> {
    const now = this.clock();
    const budget = `recovery:${user.id}`;
    const reserved = await reserveAttempt(this.db, budget, now, this.failureWindowMs);
    if (reserved.count > this.maxFailures) {
      await this.audit(user.email, "two-factor-failed", `ip ${ip}, recovery code, throttled`);
      throw throttled(reserved.windowStart + this.failureWindowMs - now);
    }
    const used = await this.db
      .updateTable("recovery_codes")
      .set({ used_at: now })
      .where("code_hash", "=", recoveryCodeHash(this.options.pepper, code))
      .where("user_id", "=", user.id)
      .where("used_at", "is", null)
      .executeTakeFirst();
    if (Number(used.numUpdatedRows) !== 1) {
      await this.audit(user.email, "two-factor-failed", `ip ${ip}, wrong or used recovery code`);
      throw new KeysError("invalid-two-factor-token", "the recovery code is not valid, or was used already");
    }
    await clearAttempts(this.db, budget);
    const { n } = await this.db
      .selectFrom("recovery_codes")
      .select((eb) => eb.fn.countAll<number>().as("n"))
      .where("user_id", "=", user.id)
      .where("used_at", "is", null)
      .executeTakeFirstOrThrow();
    return Number(n);
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
    const user = await this.userById(userId);
    const seed = user.totp_secret;
    if (seed === null) throw twoFactorNotOn();
    const failed = (why: string) =>
      this.audit(user.email, "two-factor-disable-failed", `ip ${actor.ip}, ${why}`);
    await this.checkCurrentPassword(user, password, actor.ip, failed);
    await this.acceptCode(userId, seed, user.totp_last_step, code, failed);
    const ended = await this.db.transaction().execute(async (tx) => {
      // Conditional on the seed checked, so a set-up finished meanwhile is not undone unseen.
      const off = await tx
        .updateTable("users")
        .set({ totp_secret: null, totp_pending: null, totp_last_step: null })
        .where("id", "=", userId)
        .where("totp_secret", "=", seed)
        .executeTakeFirst();
      if (Number(off.numUpdatedRows) !== 1) return undefined;
      await this.replaceRecoveryCodes(tx, userId, []);
      const others = await tx
        .deleteFrom("sessions")
        .where("user_id", "=", userId)
        .where("token_hash", "!=", tokenHash(keepSession))
        .executeTakeFirst();
      return Number(others.numDeletedRows);
    });
    if (ended === undefined) throw twoFactorNotOn();
    await clearAttempts(this.db, reauthKey(userId));
    await this.audit(
      user.email,
      "two-factor-disabled",
      `ip ${actor.ip}, ${ended} other session${ended === 1 ? "" : "s"} ended`,
    );
  }

  // --- key pairs ---

  /** A new pair; refused when two are active. The count and the insert are one transaction holding the account row. */
  async createKey(
    userId: number,
    actor?: Actor,
    name?: string,
  ): Promise<{ accessKeyId: string; secretKey: string; status: "Active"; createdAt: string }> {
    const accessKeyId = newAccessKeyId();
    const secretKey = newSecret();
    const now = this.clock();
    await this.db.transaction().execute(async (tx) => {
      await this.holdAccount(tx, userId);
      await this.checkActiveLimit(tx, userId, "any");
      await tx
        .insertInto("key_pairs")
        .values({
          access_key_id: accessKeyId,
          user_id: userId,
          secret_hash: secretHash(this.options.pepper, secretKey),
          status: "Active",
          name: name ?? null,
          created_at: now,
          last_used_at: null,
        })
        .execute();
    });
    await this.audit(await this.emailOf(userId), "key-created", withActor(accessKeyId, actor));
    return { accessKeyId, secretKey, status: "Active", createdAt: iso(now)! };
  }

  private async holdAccount(tx: Transaction<KeysDatabase>, userId: number) {
    let lock = tx.selectFrom("users").select("id").where("id", "=", userId);
    if (this.options.store.kind === "postgres") lock = lock.forUpdate();
    await lock.executeTakeFirstOrThrow();
  }

  /**
   * The quota: at most two pairs per account, Inactive ones counted (as AWS's AccessKeysPerUser), so deactivating is
   * no way to pile up pairs; activating is checked against the active ones.
   */
  private async checkActiveLimit(
    tx: Transaction<KeysDatabase>,
    userId: number,
    counting: "any" | "Active" = "Active",
  ) {
    let count = tx
      .selectFrom("key_pairs")
      .select((eb) => eb.fn.countAll<number>().as("n"))
      .where("user_id", "=", userId);
    if (counting === "Active") count = count.where("status", "=", "Active");
    const { n } = await count.executeTakeFirstOrThrow();
    if (Number(n) >= MAX_ACTIVE_KEYS)
      throw new KeysError(
        "key-limit-exceeded",
        `Cannot exceed quota for AccessKeysPerUser: ${MAX_ACTIVE_KEYS}`,
        { limit: MAX_ACTIVE_KEYS },
      );
  }

  /** Renames a pair, or makes it Active or Inactive (activating counts against the limit, like a create). */
  async updateKey(
    userId: number,
    accessKeyId: string,
    change: { name?: string | null | undefined; status?: KeyStatus | undefined },
    actor: Actor,
  ): Promise<OwnKeyPairView> {
    if (!ACCESS_KEY_ID.test(accessKeyId)) throw notFound(accessKeyId);
    const found = await this.db.transaction().execute(async (tx) => {
      await this.holdAccount(tx, userId);
      const row = await tx
        .selectFrom("key_pairs")
        .select("status")
        .where("access_key_id", "=", accessKeyId)
        .where("user_id", "=", userId)
        .executeTakeFirst();
      if (!row) return false;
      if (change.status === "Active" && row.status !== "Active") await this.checkActiveLimit(tx, userId);
      await tx
        .updateTable("key_pairs")
        .set({
          ...(change.status ? { status: change.status } : {}),
          ...(change.name !== undefined ? { name: change.name } : {}),
        })
        .where("access_key_id", "=", accessKeyId)
        .execute();
      return true;
    });
    if (!found) throw notFound(accessKeyId);
    const what = [change.status, change.name !== undefined ? "renamed" : undefined]
      .filter(Boolean)
      .join(", ");
    await this.audit(await this.emailOf(userId), "key-updated", withActor(`${accessKeyId} ${what}`, actor));
    const keys = await this.listOwnKeys(userId);
    return keys.find((k) => k.accessKeyId === accessKeyId)!;
  }

  /** The session's own pairs, Active and Inactive, for the page (no key pair needed, and no "last used" touched). */
  async listOwnKeys(userId: number): Promise<OwnKeyPairView[]> {
    const rows = await this.db
      .selectFrom("key_pairs")
      .select(["access_key_id", "name", "status", "created_at", "last_used_at"])
      .where("user_id", "=", userId)
      .orderBy("created_at")
      .execute();
    return rows.map((r) => ({
      accessKeyId: r.access_key_id,
      name: r.name,
      status: r.status === "Active" ? "Active" : "Inactive",
      createdAt: iso(r.created_at)!,
      lastUsedAt: iso(r.last_used_at),
    }));
  }

  /**
   * Authenticates a key pair (unknown id and wrong secret alike fail) and lists its account's pairs. Failures are
   * counted per address (as failed logins are: 100 in the window, then 429) and each is audited, under the pair's owner
   * when the id is real; an unknown id does the same work (a lookup, an HMAC, a comparison, two writes), so timing does
   * not tell which ids exist.
   */
  async listKeys(accessKeyId: string, secretKey: string, ip = "unknown"): Promise<KeyPairView[]> {
    const throttleKey = `keyauth:${ip}`;
    const left = this.refusals.remaining(throttleKey, this.clock());
    if (left > 0) throw throttled(left);
    // The pair with this id or, when there is none, the next one in the index: an unknown id reads a row too (the
    // same index walk and the same row to decode), so it takes as long as a real id with a wrong secret.
    const lookup = ACCESS_KEY_ID.test(accessKeyId) ? accessKeyId : NO_KEY_ID;
    const near = await this.db
      .selectFrom("key_pairs")
      .selectAll()
      .where("access_key_id", ">=", lookup)
      .orderBy("access_key_id")
      .limit(1)
      .executeTakeFirst();
    const row = near?.access_key_id === lookup ? near : undefined;
    const presented = secretHash(this.options.pepper, secretKey);
    const matches =
      sameHash(presented, near?.secret_hash ?? DUMMY_SECRET_HASH) &&
      row !== undefined &&
      row.status === "Active";
    if (!matches) {
      const now = this.clock();
      // The owner's email for the audit; an unknown id asks for the neighbour's, so both take the same query.
      const email = await this.emailOf(near?.user_id ?? -1);
      const owner = row ? email : null;
      const id = row ? row.access_key_id : "unknown key id";
      const failures = await reserveAttempt(this.db, throttleKey, now, this.failureWindowMs);
      if (failures.count > this.maxAddressFailures) {
        const until = failures.windowStart + this.failureWindowMs;
        if (this.refusals.remember(throttleKey, until, now))
          await this.audit(owner, "key-auth-throttled", `${id}, ip ${ip}, refused until ${iso(until)}`);
        throw throttled(until - now);
      }
      await this.audit(owner, "key-auth-failed", `${id}, ip ${ip}`);
      throw new KeysError("invalid-credentials", "the access key id or secret key is not correct");
    }
    const user = await this.db
      .selectFrom("users")
      .select("disabled")
      .where("id", "=", row.user_id)
      .executeTakeFirst();
    if (!user || user.disabled === 1)
      throw new KeysError("invalid-credentials", "the access key id or secret key is not correct");
    // lastUsedAt to the minute: a busy key costs one write a minute, not one per request.
    const now = this.clock();
    if (row.last_used_at === null || now - row.last_used_at >= LAST_USED_RESOLUTION_MS)
      await this.db
        .updateTable("key_pairs")
        .set({ last_used_at: now })
        .where("access_key_id", "=", accessKeyId)
        .execute();
    return (await this.listOwnKeys(row.user_id)).map(({ name: _name, ...view }) => ({
      ...view,
      // This very request used the key: its own row shows it even within the minute's resolution.
      lastUsedAt: view.accessKeyId === accessKeyId && view.lastUsedAt === null ? iso(now) : view.lastUsedAt,
    }));
  }

  /** Deletes one of the caller's pairs; someone else's is as unknown as a missing one. */
  async deleteKey(userId: number, accessKeyId: string, actor?: Actor): Promise<void> {
    // Something that is no key id (a NUL byte, say) is not looked up: it cannot exist, and not every store takes it.
    const deleted = ACCESS_KEY_ID.test(accessKeyId)
      ? Number(
          (
            await this.db
              .deleteFrom("key_pairs")
              .where("access_key_id", "=", accessKeyId)
              .where("user_id", "=", userId)
              .executeTakeFirst()
          ).numDeletedRows,
        )
      : 0;
    if (deleted !== 1) {
      await this.audit(
        await this.emailOf(userId),
        "key-delete-failed",
        withActor(ACCESS_KEY_ID.test(accessKeyId) ? accessKeyId : "(not a key id)", actor),
      );
      throw notFound(accessKeyId);
    }
    await this.audit(await this.emailOf(userId), "key-deleted", withActor(accessKeyId, actor));
  }

  // --- audit trail ---

  /** Newest first; `email` narrows it to one account. */
  async listAudit(options: { email?: string; limit?: number } = {}) {
    let query = this.db
      .selectFrom("audit")
      .select(["at", "email", "event", "detail"])
      .orderBy("at", "desc")
      .orderBy("id", "desc")
      .limit(options.limit ?? 100);
    if (options.email) query = query.where("email", "=", options.email.trim().toLowerCase());
    const rows = await query.execute();
    return rows.map((r) => ({ at: iso(Number(r.at))!, email: r.email, event: r.event, detail: r.detail }));
  }

  /** The account's own trail, for the page. */
  async accountAudit(userId: number, limit = 50) {
    const email = await this.emailOf(userId);
    return email ? this.listAudit({ email, limit }) : [];
  }

  /** Records something that happened outside the service's own calls (a refused cross-site request). */
  async record(event: AuditEvent, detail: string, email: string | null = null): Promise<void> {
    await this.audit(email, event, detail);
  }

  private async audit(email: string | null, event: AuditEvent, detail: string): Promise<void> {
    await this.db
      .insertInto("audit")
      .values({ at: this.clock(), email, event, detail: detail.slice(0, 255) })
      .execute();
  }

  private async emailOf(userId: number): Promise<string | null> {
    const row = await this.db.selectFrom("users").select("email").where("id", "=", userId).executeTakeFirst();
    return row?.email ?? null;
  }

  // --- retention ---

  /**
   * Drops what no longer counts: throttle rows whose window has ended, audit entries past the retention, and failed
   * logins for emails with no account past the shorter one (anyone can make those, as many as the throttle lets them).
   */
  async prune(): Promise<{ throttle: number; audit: number }> {
    const now = this.clock();
    const throttle = await this.db
      .deleteFrom("throttle")
      .where("window_start", "<", now - Math.max(this.failureWindowMs, this.slowDown.maxDelayMs))
      .executeTakeFirst();
    const old = await this.db
      .deleteFrom("audit")
      .where("at", "<", now - (this.options.auditRetentionMs ?? 90 * 86_400_000))
      .executeTakeFirst();
    const strangers = await this.db
      .deleteFrom("audit")
      .where("at", "<", now - (this.options.strangerAuditRetentionMs ?? 7 * 86_400_000))
      .where("event", "in", [
        "login-failed",
        "login-throttled",
        "cross-site-refused",
        "key-auth-failed",
        "key-auth-throttled",
      ])
      .where((eb) =>
        eb.or([eb("email", "is", null), eb("email", "not in", eb.selectFrom("users").select("email"))]),
      )
      .executeTakeFirst();
    return {
      throttle: Number(throttle.numDeletedRows),
      audit: Number(old.numDeletedRows) + Number(strangers.numDeletedRows),
    };
  }
}

/** Looked up in place of a malformed id, so both take one query; no real id has this form (base32 has no 0 or 1). */
const NO_KEY_ID = "LFAK0000000000000000";
const DUMMY_SECRET_HASH = "0".repeat(64);

/** Public session ids: 8 random bytes in base64url. */
const SESSION_ID = /^[A-Za-z0-9_-]{11}$/;

/** The throttle key of re-authentication (password change, two-factor off): one budget per account. */
const reauthKey = (userId: number) => `password:${userId}`;

const twoFactorNotOn = () =>
  new KeysError("two-factor-not-enabled", "two-factor authentication is not on for this account");

/** How a refused code at login or set-up is recorded (as it always was). */
const loginCodeFailure =
  (service: KeysService, email: string, ip: string) =>
  (why: "throttled" | "wrong code" | "code already used"): Promise<void> =>
    service.record("two-factor-failed", why === "wrong code" ? `ip ${ip}` : `ip ${ip}, ${why}`, email);

const throttled = (retryAfterMs: number, message = "too many attempts; try again later") =>
  new KeysError("throttled", message, { retryAfterSeconds: Math.max(1, Math.ceil(retryAfterMs / 1000)) });

const slowedDown = (retryAfterMs: number) =>
  throttled(
    retryAfterMs,
    "this account is slowed down after many failed logins; log in from a browser that logged in before, or give the password with a current two-factor code",
  );

const withActor = (detail: string, actor: Actor | undefined) =>
  actor ? `${detail}, ip ${actor.ip}` : detail;

/** A 404 that names the id only when it is one: a 5,000-character "id" is not echoed back. */
function notFound(accessKeyId: string): KeysError {
  return new KeysError(
    "key-not-found",
    ACCESS_KEY_ID.test(accessKeyId)
      ? `no key pair ${accessKeyId} on this account`
      : "no key pair with that id on this account (ids are LFAK and 16 characters)",
  );
}
