import type { Kysely, Migration, MigrationProvider } from "kysely";
import { PostgresAdapter } from "kysely";

/** One migration set for SQLite and PostgreSQL: only types both understand. */
const migrations: Record<string, Migration> = {
  "0001_initial": {
    async up(db: Kysely<unknown>) {
      // SQLite numbers an INTEGER PRIMARY KEY by itself; PostgreSQL needs a serial.
      const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
      await db.schema
        .createTable("users")
        .addColumn("id", postgres ? "serial" : "integer", (c) => c.primaryKey())
        .addColumn("email", "varchar(254)", (c) => c.notNull().unique())
        .addColumn("password_hash", "varchar(255)", (c) => c.notNull())
        .addColumn("totp_secret", "varchar(64)")
        .addColumn("totp_last_step", "bigint")
        .addColumn("disabled", "integer", (c) => c.notNull().defaultTo(0))
        .addColumn("created_at", "bigint", (c) => c.notNull())
        .execute();
      await db.schema
        .createTable("sessions")
        .addColumn("token_hash", "varchar(64)", (c) => c.primaryKey())
        .addColumn("user_id", "integer", (c) => c.notNull().references("users.id").onDelete("cascade"))
        .addColumn("two_factor_pending", "integer", (c) => c.notNull())
        .addColumn("created_at", "bigint", (c) => c.notNull())
        .addColumn("last_seen_at", "bigint", (c) => c.notNull())
        .execute();
      await db.schema
        .createTable("key_pairs")
        .addColumn("access_key_id", "varchar(32)", (c) => c.primaryKey())
        .addColumn("user_id", "integer", (c) => c.notNull().references("users.id").onDelete("cascade"))
        .addColumn("secret_hash", "varchar(64)", (c) => c.notNull())
        .addColumn("status", "varchar(16)", (c) => c.notNull())
        .addColumn("created_at", "bigint", (c) => c.notNull())
        .addColumn("last_used_at", "bigint")
        .execute();
      await db.schema.createIndex("key_pairs_user").on("key_pairs").column("user_id").execute();
      await db.schema
        .createTable("throttle")
        .addColumn("key", "varchar(300)", (c) => c.primaryKey())
        .addColumn("failures", "integer", (c) => c.notNull())
        .addColumn("window_start", "bigint", (c) => c.notNull())
        .execute();
    },
  },
  "0002_audit": {
    async up(db: Kysely<unknown>) {
      const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
      await db.schema
        .createTable("audit")
        .addColumn("id", postgres ? "bigserial" : "integer", (c) => c.primaryKey())
        .addColumn("at", "bigint", (c) => c.notNull())
        .addColumn("email", "varchar(254)")
        .addColumn("event", "varchar(32)", (c) => c.notNull())
        .addColumn("detail", "varchar(255)", (c) => c.notNull())
        .execute();
      await db.schema.createIndex("audit_at").on("audit").column("at").execute();
    },
  },
  "0003_throttle_names_sessions": {
    async up(db: Kysely<unknown>) {
      const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
      // The last evaluated attempt of a key, for the per-account slow-down.
      await db.schema.alterTable("throttle").addColumn("last_at", "bigint").execute();
      await db.schema.createIndex("throttle_window").on("throttle").column("window_start").execute();
      // Sealed seeds are longer than clear ones (SQLite does not enforce varchar lengths).
      if (postgres)
        await db.schema
          .alterTable("users")
          .alterColumn("totp_secret", (c) => c.setDataType("varchar(255)"))
          .execute();
      // A seed set up from the page waits here until a code confirms it.
      await db.schema.alterTable("users").addColumn("totp_pending", "varchar(255)").execute();
      await db.schema.alterTable("key_pairs").addColumn("name", "varchar(64)").execute();
      await db.schema.alterTable("sessions").addColumn("id", "varchar(16)").execute();
      await db.schema.alterTable("sessions").addColumn("ip", "varchar(64)").execute();
      await db.schema.alterTable("sessions").addColumn("user_agent", "varchar(255)").execute();
      await db.schema.createIndex("audit_email").on("audit").columns(["email", "at"]).execute();
    },
  },
  "0004_recovery_codes": {
    async up(db: Kysely<unknown>) {
      // One row per recovery code: its HMAC, and when it was used (a code works once).
      await db.schema
        .createTable("recovery_codes")
        .addColumn("code_hash", "varchar(64)", (c) => c.primaryKey())
        .addColumn("user_id", "integer", (c) => c.notNull().references("users.id").onDelete("cascade"))
        .addColumn("used_at", "bigint")
        .execute();
      await db.schema.createIndex("recovery_codes_user").on("recovery_codes").column("user_id").execute();
    },
  },
  "0005_login_networks": {
    async up(db: Kysely<unknown>) {
      // The networks an account completed logins from, as HMACs: a lane ahead of the guesses for its owner.
      await db.schema
        .createTable("login_networks")
        .addColumn("user_id", "integer", (c) => c.notNull().references("users.id").onDelete("cascade"))
        .addColumn("network_hash", "varchar(64)", (c) => c.notNull())
        .addColumn("last_at", "bigint", (c) => c.notNull())
        .addPrimaryKeyConstraint("login_networks_pk", ["user_id", "network_hash"])
        .execute();
    },
  },
};

export const migrationProvider: MigrationProvider = {
  getMigrations: () => Promise.resolve(migrations),
};
