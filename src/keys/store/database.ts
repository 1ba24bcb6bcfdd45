import { chmodSync, closeSync, mkdirSync, openSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import Database from "better-sqlite3";
import { Kysely, Migrator, PostgresDialect, SqliteDialect } from "kysely";
import pg from "pg";
import { migrationProvider } from "./migrations.js";
import type { KeysDatabase } from "./schema.js";

export type StoreKind = "sqlite" | "postgres";

export interface KeyStore {
  db: Kysely<KeysDatabase>;
  kind: StoreKind;
  /** Where it lives, without credentials (for logs). */
  description: string;
  close(): Promise<void>;
}

// PostgreSQL bigint (int8) arrives as a string; our times and steps fit a double exactly.
pg.types.setTypeParser(20, (value) => Number(value));

/**
 * Opens the key store: `postgres://…` for PostgreSQL (several replicas share it), `sqlite:PATH`, or by default a
 * SQLite file in the data directory. Runs the migrations before returning.
 */
export async function openKeyStore(databaseUrl: string | undefined, dataDir: string): Promise<KeyStore> {
  let store: KeyStore;
  if (databaseUrl && /^postgres(ql)?:\/\//.test(databaseUrl)) {
    const pool = new pg.Pool({ connectionString: databaseUrl, max: 10 });
    // An idle client's connection can end under it (server restart, failover); the pool replaces it. Unhandled, the
    // error event would end the process.
    pool.on("error", () => {});
    const db = new Kysely<KeysDatabase>({ dialect: new PostgresDialect({ pool }) });
    const url = new URL(databaseUrl);
    store = {
      db,
      kind: "postgres",
      description: `postgres://${url.host}${url.pathname}`,
      close: () => db.destroy(),
    };
  } else {
    if (databaseUrl && !databaseUrl.startsWith("sqlite:"))
      throw new Error(
        `DATABASE_URL must be postgres://… or sqlite:PATH (got ${databaseUrl.split(":")[0]}:…)`,
      );
    const path = databaseUrl
      ? resolve(databaseUrl.slice("sqlite:".length))
      : join(resolve(dataDir), "keys.sqlite");
    mkdirSync(dirname(path), { recursive: true });
    // Owner-only, like the pepper beside it: the file holds password hashes and sealed seeds. SQLite gives its -wal
    // and -shm files the database file's mode.
    closeSync(openSync(path, "a", 0o600));
    chmodSync(path, 0o600);
    const sqlite = new Database(path);
    sqlite.pragma("journal_mode = WAL");
    sqlite.pragma("foreign_keys = ON");
    sqlite.pragma("busy_timeout = 5000");
    const db = new Kysely<KeysDatabase>({ dialect: new SqliteDialect({ database: sqlite }) });
    store = { db, kind: "sqlite", description: `sqlite:${path}`, close: () => db.destroy() };
  }
  const { error, results } = await new Migrator({
    db: store.db,
    provider: migrationProvider,
  }).migrateToLatest();
  if (error) {
    await store.close();
    const failed = results?.find((r) => r.status === "Error")?.migrationName;
    throw new Error(`key store migration ${failed ?? ""} failed: ${String(error)}`);
  }
  return store;
}
