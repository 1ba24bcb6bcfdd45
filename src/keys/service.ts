import { generateSecret, generateURI, verifySync } from "otplib";
import type { KeyStore } from "./store/database.js";
import type { AuditEvent } from "./store/schema.js";
import { dummyPasswordHash, hashPassword, needsRehash, verifyPassword } from "./crypto/passwords.js";
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

/** At most this many active key pairs per account (as AWS's AccessKeysPerUser quota). */
export const MAX_ACTIVE_KEYS = 2;

export interface KeysServiceOptions {
  store: KeyStore;
  pepper: Buffer;
  clock?: () => number;
  /** A session unused this long ends. */
  idleTimeoutMs?: number;
  /** A session ends this long after login whatever its use. */
  absoluteTimeoutMs?: number;
  /** Failed logins per account and per IP within the window before login is refused for the rest of it. */
  maxFailures?: number;
  failureWindowMs?: number;
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
}

export interface KeyPairView {
  accessKeyId: string;
  status: "Active";
  createdAt: string;
  lastUsedAt: string | null;
}

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
  private readonly failureWindowMs: number;

  constructor(private readonly options: KeysServiceOptions) {
    this.clock = options.clock ?? Date.now;
    this.idleTimeoutMs = options.idleTimeoutMs ?? 30 * 60_000;
    this.absoluteTimeoutMs = options.absoluteTimeoutMs ?? 12 * 3_600_000;
    this.maxFailures = options.maxFailures ?? 5;
    this.failureWindowMs = options.failureWindowMs ?? 15 * 60_000;
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
        totp_last_step: null,
        disabled: 0,
        created_at: this.clock(),
      })
      .execute();
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
      .set({ totp_secret: secret, totp_last_step: null })
      .where("id", "=", user.id)
      .execute();
    return { secret, uri: generateURI({ issuer: "lightfleet", label: user.email, secret }) };
  }

  async disableTwoFactor(email: string): Promise<void> {
    const user = await this.requireUser(email);
    await this.db
      .updateTable("users")
      .set({ totp_secret: null, totp_last_step: null })
      .where("id", "=", user.id)
      .execute();
  }

  /** Disables an account: its sessions end and its keys stop working. */
  async disableUser(email: string): Promise<void> {
    const user = await this.requireUser(email);
    await this.db.transaction().execute(async (tx) => {
      await tx.updateTable("users").set({ disabled: 1 }).where("id", "=", user.id).execute();
      await tx.deleteFrom("sessions").where("user_id", "=", user.id).execute();
    });
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
   * Checks the password (same work and answer for an unknown email) under per-account and per-IP throttling, and
   * opens a new session: a fresh id at every login, so a session id planted before login is worthless.
   */
  async login(
    email: string,
    password: string,
    ip: string,
  ): Promise<{ token: string; twoFactorRequired: boolean }> {
    const normalized = email.trim().toLowerCase();
    const keys = [`account:${normalized}`, `ip:${ip}`];
    await this.checkThrottle(keys);
    const user = await this.db
      .selectFrom("users")
      .selectAll()
      .where("email", "=", normalized)
      .executeTakeFirst();
    const ok = await verifyPassword(password, user?.password_hash ?? (await dummyPasswordHash()));
    if (!user || !ok || user.disabled === 1) {
      await this.recordFailure(keys);
      await this.audit(normalized.slice(0, 254), "login-failed", `ip ${ip}`);
      throw new KeysError("invalid-credentials", "the email or password is not correct");
    }
    await this.db.deleteFrom("throttle").where("key", "=", keys[0]!).execute();
    // The password is at hand only now: a hash from weaker parameters is replaced by one at today's.
    if (needsRehash(user.password_hash))
      await this.db
        .updateTable("users")
        .set({ password_hash: await hashPassword(password) })
        .where("id", "=", user.id)
        .execute();
    const twoFactorRequired = user.totp_secret !== null;
    const token = await this.openSession(user.id, twoFactorRequired);
    await this.audit(user.email, "login", `ip ${ip}${twoFactorRequired ? ", second factor owed" : ""}`);
    return { token, twoFactorRequired };
  }

  /** Completes the second factor: a valid code not used before; the session id is rotated. */
  async completeTwoFactor(token: string, code: string, ip: string): Promise<string> {
    const session = await this.session(token);
    if (!session) throw new KeysError("session-required", "log in first");
    await this.checkThrottle([`ip:${ip}`, `totp:${session.userId}`]);
    const user = await this.db
      .selectFrom("users")
      .selectAll()
      .where("id", "=", session.userId)
      .executeTakeFirstOrThrow();
    if (!session.twoFactorPending || !user.totp_secret) return token;
    const result = verifySync({
      secret: user.totp_secret,
      token: code,
      epoch: Math.floor(this.clock() / 1000),
      epochTolerance: 30,
      ...(user.totp_last_step !== null ? { afterTimeStep: Number(user.totp_last_step) } : {}),
    });
    const step = result.valid && "timeStep" in result ? Number(result.timeStep) : undefined;
    if (step === undefined) {
      await this.recordFailure([`ip:${ip}`, `totp:${session.userId}`]);
      await this.audit(user.email, "two-factor-failed", `ip ${ip}`);
      throw new KeysError("invalid-two-factor-token", "the code is not valid, or was used already");
    }
    // Record the step first, conditionally, so two concurrent uses of one code cannot both pass.
    const updated = await this.db
      .updateTable("users")
      .set({ totp_last_step: step })
      .where("id", "=", user.id)
      .where((eb) => eb.or([eb("totp_last_step", "is", null), eb("totp_last_step", "<", step)]))
      .executeTakeFirst();
    if (Number(updated.numUpdatedRows) !== 1) {
      await this.audit(user.email, "two-factor-failed", `ip ${ip}, code already used`);
      throw new KeysError("invalid-two-factor-token", "the code is not valid, or was used already");
    }
    await this.audit(user.email, "two-factor", `ip ${ip}`);
    await this.db.deleteFrom("sessions").where("token_hash", "=", tokenHash(token)).execute();
    return this.openSession(user.id, false);
  }

  async logout(token: string): Promise<void> {
    const row = await this.db
      .deleteFrom("sessions")
      .where("token_hash", "=", tokenHash(token))
      .returning("user_id")
      .executeTakeFirst();
    if (row) await this.audit(await this.emailOf(row.user_id), "logout", "");
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
    return { userId: row.user_id, twoFactorPending: row.two_factor_pending === 1 };
  }

  private async openSession(userId: number, twoFactorPending: boolean): Promise<string> {
    const token = newSessionToken();
    const now = this.clock();
    await this.db
      .insertInto("sessions")
      .values({
        token_hash: tokenHash(token),
        user_id: userId,
        two_factor_pending: twoFactorPending ? 1 : 0,
        created_at: now,
        last_seen_at: now,
      })
      .execute();
    return token;
  }

  // --- key pairs ---

  /** A new pair; refused when two are active. The count and the insert are one transaction holding the account row. */
  async createKey(
    userId: number,
  ): Promise<{ accessKeyId: string; secretKey: string; status: "Active"; createdAt: string }> {
    const accessKeyId = newAccessKeyId();
    const secretKey = newSecret();
    const now = this.clock();
    await this.db.transaction().execute(async (tx) => {
      let lock = tx.selectFrom("users").select("id").where("id", "=", userId);
      if (this.options.store.kind === "postgres") lock = lock.forUpdate();
      await lock.executeTakeFirstOrThrow();
      const { n } = await tx
        .selectFrom("key_pairs")
        .select((eb) => eb.fn.countAll<number>().as("n"))
        .where("user_id", "=", userId)
        .where("status", "=", "Active")
        .executeTakeFirstOrThrow();
      if (Number(n) >= MAX_ACTIVE_KEYS)
        throw new KeysError(
          "key-limit-exceeded",
          `Cannot exceed quota for AccessKeysPerUser: ${MAX_ACTIVE_KEYS}`,
          { limit: MAX_ACTIVE_KEYS },
        );
      await tx
        .insertInto("key_pairs")
        .values({
          access_key_id: accessKeyId,
          user_id: userId,
          secret_hash: secretHash(this.options.pepper, secretKey),
          status: "Active",
          created_at: now,
          last_used_at: null,
        })
        .execute();
    });
    await this.audit(await this.emailOf(userId), "key-created", accessKeyId);
    return { accessKeyId, secretKey, status: "Active", createdAt: iso(now)! };
  }

  /** Authenticates a key pair (unknown id and wrong secret alike fail) and lists its account's pairs. */
  async listKeys(accessKeyId: string, secretKey: string): Promise<KeyPairView[]> {
    const valid = ACCESS_KEY_ID.test(accessKeyId);
    const row = valid
      ? await this.db
          .selectFrom("key_pairs")
          .selectAll()
          .where("access_key_id", "=", accessKeyId)
          .executeTakeFirst()
      : undefined;
    const presented = secretHash(this.options.pepper, secretKey);
    // Compare even when the id is unknown, so timing does not tell which ids exist.
    const matches =
      sameHash(presented, row?.secret_hash ?? "0".repeat(64)) && row !== undefined && row.status === "Active";
    if (!matches)
      throw new KeysError("invalid-credentials", "the access key id or secret key is not correct");
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
    const rows = await this.db
      .selectFrom("key_pairs")
      .select(["access_key_id", "created_at", "last_used_at"])
      .where("user_id", "=", row.user_id)
      .where("status", "=", "Active")
      .orderBy("created_at")
      .execute();
    return rows.map((r) => ({
      accessKeyId: r.access_key_id,
      status: "Active",
      createdAt: iso(r.created_at)!,
      lastUsedAt: iso(r.last_used_at),
    }));
  }

  /** Deletes one of the caller's pairs; someone else's is as unknown as a missing one. */
  async deleteKey(userId: number, accessKeyId: string): Promise<void> {
    const result = await this.db
      .deleteFrom("key_pairs")
      .where("access_key_id", "=", accessKeyId)
      .where("user_id", "=", userId)
      .executeTakeFirst();
    if (Number(result.numDeletedRows) !== 1)
      throw new KeysError("key-not-found", `no key pair ${accessKeyId} on this account`);
    await this.audit(await this.emailOf(userId), "key-deleted", accessKeyId);
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

  // --- throttling ---

  private async checkThrottle(keys: string[]): Promise<void> {
    const now = this.clock();
    const rows = await this.db.selectFrom("throttle").selectAll().where("key", "in", keys).execute();
    for (const row of rows) {
      const ends = Number(row.window_start) + this.failureWindowMs;
      if (row.failures >= this.maxFailures && now < ends)
        throw new KeysError("throttled", "too many failed attempts; try again later", {
          retryAfterSeconds: Math.ceil((ends - now) / 1000),
        });
    }
  }

  private async recordFailure(keys: string[]): Promise<void> {
    const now = this.clock();
    for (const key of keys) {
      const row = await this.db.selectFrom("throttle").selectAll().where("key", "=", key).executeTakeFirst();
      if (!row || now - Number(row.window_start) >= this.failureWindowMs) {
        await this.db
          .insertInto("throttle")
          .values({ key, failures: 1, window_start: now })
          .onConflict((oc) => oc.column("key").doUpdateSet({ failures: 1, window_start: now }))
          .execute();
      } else {
        await this.db
          .updateTable("throttle")
          .set((eb) => ({ failures: eb("failures", "+", 1) }))
          .where("key", "=", key)
          .execute();
      }
    }
  }
}
