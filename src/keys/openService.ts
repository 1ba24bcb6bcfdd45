import type { Config } from "../config/schema.js";
import { loadServerSecrets } from "./crypto/secrets.js";
import { KeysService } from "./service.js";
import type { KeyStore } from "./store/database.js";

/**
 * The service over an open store. On PostgreSQL (replicas share the database) the pepper and the seed key must come
 * from the environment: a secret made up by each replica would break every key created through another.
 */
export async function openService(
  store: KeyStore,
  env: NodeJS.ProcessEnv,
  config: Config,
  clock?: () => number,
): Promise<KeysService> {
  if (store.kind === "postgres") {
    const missing = ["LIGHTFLEET_KEYS_PEPPER", "LIGHTFLEET_KEYS_SEED_KEY"].filter(
      (v) => env[v] === undefined,
    );
    if (missing.length > 0)
      throw new Error(
        `${missing.join(" and ")} must be set when the key store is PostgreSQL: replicas sharing it need the same secrets (the chart takes them from a Secret)`,
      );
  }
  const { pepper, seedKey } = loadServerSecrets(env, config.dataDir);
  return new KeysService({
    store,
    pepper: pepper.value,
    seedKey: seedKey.value,
    auditRetentionMs: config.keys.auditRetentionDays * 86_400_000,
    ...(clock ? { clock } : {}),
  });
}
