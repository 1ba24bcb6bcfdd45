import type { Transaction } from "kysely";
import type { KeysDatabase } from "../store/schema.js";
import { ACCESS_KEY_ID, newAccessKeyId, newSecret, sameHash, secretHash } from "../crypto/secrets.js";
import { reserveAttempt } from "../throttle/attemptCounter.js";
import { iso, withActor, type Actor, type KeysContext } from "./context.js";
import { KeysError, notFound, throttled } from "./errors.js";

/** How stale lastUsedAt may be; it is rewritten at most once per this interval. */
export const LAST_USED_RESOLUTION_MS = 60_000;

/** At most this many key pairs per account, Active and Inactive alike (as AWS's AccessKeysPerUser quota). */
export const MAX_ACTIVE_KEYS = 2;

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

/** Looked up in place of a malformed id, so both take one query; no real id has this form (base32 has no 0 or 1). */
const NO_KEY_ID = "LFAK0000000000000000";
const DUMMY_SECRET_HASH = "0".repeat(64);

/** Key pairs: at most two per account, created, renamed, (de)activated and deleted by the owner, listed by a pair. */
export class KeyPairs {
  constructor(private readonly ctx: KeysContext) {}

  /** A new pair; refused when two are active. The count and the insert are one transaction holding the account row. */
  async createKey(
    userId: number,
    actor?: Actor,
    name?: string,
  ): Promise<{ accessKeyId: string; secretKey: string; status: "Active"; createdAt: string }> {
    const accessKeyId = newAccessKeyId();
    const secretKey = newSecret();
    const now = this.ctx.clock();
    await this.ctx.db.transaction().execute(async (tx) => {
      await this.holdAccount(tx, userId);
      await this.checkActiveLimit(tx, userId, "any");
      await tx
        .insertInto("key_pairs")
        .values({
          access_key_id: accessKeyId,
          user_id: userId,
          secret_hash: secretHash(this.ctx.pepper, secretKey),
          status: "Active",
          name: name ?? null,
          created_at: now,
          last_used_at: null,
        })
        .execute();
    });
    await this.ctx.audit(await this.ctx.emailOf(userId), "key-created", withActor(accessKeyId, actor));
    return { accessKeyId, secretKey, status: "Active", createdAt: iso(now)! };
  }

  private async holdAccount(tx: Transaction<KeysDatabase>, userId: number) {
    let lock = tx.selectFrom("users").select("id").where("id", "=", userId);
    if (this.ctx.options.store.kind === "postgres") lock = lock.forUpdate();
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
    const found = await this.ctx.db.transaction().execute(async (tx) => {
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
    await this.ctx.audit(
      await this.ctx.emailOf(userId),
      "key-updated",
      withActor(`${accessKeyId} ${what}`, actor),
    );
    const keys = await this.listOwnKeys(userId);
    return keys.find((k) => k.accessKeyId === accessKeyId)!;
  }

  /** The session's own pairs, Active and Inactive, for the page (no key pair needed, and no "last used" touched). */
  async listOwnKeys(userId: number): Promise<OwnKeyPairView[]> {
    const rows = await this.ctx.db
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
    const { ctx } = this;
    const throttleKey = `keyauth:${ip}`;
    const left = ctx.refusals.remaining(throttleKey, ctx.clock());
    if (left > 0) throw throttled(left);
    // The pair with this id or, when there is none, the next one in the index: an unknown id reads a row too (the
    // same index walk and the same row to decode), so it takes as long as a real id with a wrong secret.
    const lookup = ACCESS_KEY_ID.test(accessKeyId) ? accessKeyId : NO_KEY_ID;
    const near = await ctx.db
      .selectFrom("key_pairs")
      .selectAll()
      .where("access_key_id", ">=", lookup)
      .orderBy("access_key_id")
      .limit(1)
      .executeTakeFirst();
    const row = near?.access_key_id === lookup ? near : undefined;
    const presented = secretHash(ctx.pepper, secretKey);
    const matches =
      sameHash(presented, near?.secret_hash ?? DUMMY_SECRET_HASH) &&
      row !== undefined &&
      row.status === "Active";
    if (!matches) {
      const now = ctx.clock();
      // The owner's email for the audit; an unknown id asks for the neighbour's, so both take the same query.
      const email = await ctx.emailOf(near?.user_id ?? -1);
      const owner = row ? email : null;
      const id = row ? row.access_key_id : "unknown key id";
      const failures = await reserveAttempt(ctx.db, throttleKey, now, ctx.failureWindowMs);
      if (failures.count > ctx.maxAddressFailures) {
        const until = failures.windowStart + ctx.failureWindowMs;
        if (ctx.refusals.remember(throttleKey, until, now))
          await ctx.audit(owner, "key-auth-throttled", `${id}, ip ${ip}, refused until ${iso(until)}`);
        throw throttled(until - now);
      }
      await ctx.audit(owner, "key-auth-failed", `${id}, ip ${ip}`);
      throw new KeysError("invalid-credentials", "the access key id or secret key is not correct");
    }
    const user = await ctx.db
      .selectFrom("users")
      .select("disabled")
      .where("id", "=", row.user_id)
      .executeTakeFirst();
    if (!user || user.disabled === 1)
      throw new KeysError("invalid-credentials", "the access key id or secret key is not correct");
    // lastUsedAt to the minute: a busy key costs one write a minute, not one per request.
    const now = ctx.clock();
    if (row.last_used_at === null || now - row.last_used_at >= LAST_USED_RESOLUTION_MS)
      await ctx.db
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
            await this.ctx.db
              .deleteFrom("key_pairs")
              .where("access_key_id", "=", accessKeyId)
              .where("user_id", "=", userId)
              .executeTakeFirst()
          ).numDeletedRows,
        )
      : 0;
    const email = await this.ctx.emailOf(userId);
    if (deleted !== 1) {
      await this.ctx.audit(
        email,
        "key-delete-failed",
        withActor(ACCESS_KEY_ID.test(accessKeyId) ? accessKeyId : "(not a key id)", actor),
      );
      throw notFound(accessKeyId);
    }
    await this.ctx.audit(email, "key-deleted", withActor(accessKeyId, actor));
  }
}
