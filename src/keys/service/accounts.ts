import { generateSecret, generateURI } from "otplib";
import { hashPassword } from "../crypto/passwords.js";
import { SeedCipher } from "../crypto/seedCipher.js";
import type { KeysContext } from "./context.js";
import { endSessions, MIN_PASSWORD_LENGTH, replacePassword, replaceRecoveryCodes } from "./credentials.js";

/** Accounts as the operator manages them from the CLI: add, list, enable and disable, reset a password or 2FA. */
export class Accounts {
  constructor(private readonly ctx: KeysContext) {}

  async addUser(email: string, password: string): Promise<void> {
    const normalized = email.trim().toLowerCase();
    const existing = await this.ctx.db
      .selectFrom("users")
      .select("id")
      .where("email", "=", normalized)
      .executeTakeFirst();
    if (existing) throw new Error(`an account for ${normalized} exists already`);
    await this.ctx.db
      .insertInto("users")
      .values({
        email: normalized,
        password_hash: await hashPassword(password),
        totp_secret: null,
        totp_pending: null,
        totp_last_step: null,
        disabled: 0,
        created_at: this.ctx.clock(),
      })
      .execute();
    await this.ctx.audit(normalized, "user-added", "by cli");
  }

  async listUsers(): Promise<
    Array<{ email: string; twoFactor: boolean; disabled: boolean; activeKeys: number }>
  > {
    const users = await this.ctx.db
      .selectFrom("users")
      .select(["id", "email", "totp_secret", "disabled"])
      .orderBy("email")
      .execute();
    const counts = await this.ctx.db
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
    await this.ctx.db
      .updateTable("users")
      .set({ totp_secret: this.ctx.seeds.seal(secret, user.id), totp_pending: null, totp_last_step: null })
      .where("id", "=", user.id)
      .execute();
    await this.ctx.audit(user.email, "two-factor-enabled", "by cli");
    return { secret, uri: generateURI({ issuer: "lightfleet", label: user.email, secret }) };
  }

  /**
   * Turns TOTP off for an owner who lost the authenticator. Every session of the account ends, as when the owner turns
   * it off from the page: sessions opened under the old rule (perhaps by whoever holds the authenticator now) do not
   * outlive it.
   */
  async disableTwoFactor(email: string): Promise<void> {
    const user = await this.requireUser(email);
    const ended = await this.ctx.db.transaction().execute(async (tx) => {
      await tx
        .updateTable("users")
        .set({ totp_secret: null, totp_pending: null, totp_last_step: null })
        .where("id", "=", user.id)
        .execute();
      await replaceRecoveryCodes(this.ctx, tx, user.id, []);
      return endSessions(tx, user.id);
    });
    await this.ctx.audit(
      user.email,
      "two-factor-disabled",
      `by cli, ${ended} session${ended === 1 ? "" : "s"} ended`,
    );
  }

  /** Disables an account: its sessions end and its keys stop working. */
  async disableUser(email: string): Promise<void> {
    const user = await this.requireUser(email);
    await this.ctx.db.transaction().execute(async (tx) => {
      await tx.updateTable("users").set({ disabled: 1 }).where("id", "=", user.id).execute();
      await endSessions(tx, user.id);
    });
    await this.ctx.audit(user.email, "user-disabled", "by cli");
  }

  /** Enables a disabled account again: it can log in, and its active pairs work again. */
  async enableUser(email: string): Promise<void> {
    const user = await this.requireUser(email);
    await this.ctx.db.updateTable("users").set({ disabled: 0 }).where("id", "=", user.id).execute();
    await this.ctx.audit(user.email, "user-enabled", "by cli");
  }

  /** Sets a new password from the CLI; every session of the account ends. */
  async setPassword(email: string, password: string): Promise<void> {
    const user = await this.requireUser(email);
    if (password.length < MIN_PASSWORD_LENGTH)
      throw new Error(`the password must be at least ${MIN_PASSWORD_LENGTH} characters`);
    await replacePassword(this.ctx, user.id, password, undefined);
    await this.ctx.audit(user.email, "password-changed", "by cli");
  }

  /** Seals TOTP seeds stored in clear by earlier releases (run at start; a no-op once done). */
  async sealClearSeeds(): Promise<number> {
    const rows = await this.ctx.db
      .selectFrom("users")
      .select(["id", "totp_secret"])
      .where("totp_secret", "is not", null)
      .execute();
    let sealed = 0;
    for (const row of rows) {
      if (row.totp_secret === null || SeedCipher.isSealed(row.totp_secret)) continue;
      await this.ctx.db
        .updateTable("users")
        .set({ totp_secret: this.ctx.seeds.seal(row.totp_secret, row.id) })
        .where("id", "=", row.id)
        .where("totp_secret", "=", row.totp_secret)
        .execute();
      sealed++;
    }
    return sealed;
  }

  private async requireUser(email: string) {
    const user = await this.ctx.db
      .selectFrom("users")
      .selectAll()
      .where("email", "=", email.trim().toLowerCase())
      .executeTakeFirst();
    if (!user) throw new Error(`no account for ${email}`);
    return user;
  }
}
