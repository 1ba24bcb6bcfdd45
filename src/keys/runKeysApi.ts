import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { Registry } from "prom-client";
import type { Config } from "../config/schema.js";
import type { Logger } from "../log/logger.js";
import { createKeysMetrics } from "../metrics/keysMetrics.js";
import { loadServerSecrets } from "./crypto/secrets.js";
import { openService } from "./openService.js";
import { createKeysApp } from "./http/app.js";
import type { KeysService } from "./service.js";
import type { KeyStore } from "./store/database.js";
import { openKeyStore } from "./store/database.js";

export interface KeysApi {
  url: string;
  store: KeyStore;
  service: KeysService;
  stop(): Promise<void>;
}

/** Opens the store and serves the key API; `stop` drains requests and closes the store. */
export async function startKeysApi(options: {
  config: Config;
  logger: Logger;
  registry: Registry;
  port?: number;
  env?: NodeJS.ProcessEnv;
  clock?: () => number;
  /** A local run (a devnet) needs no shared pepper: say so at info level rather than warn. */
  local?: boolean;
}): Promise<KeysApi> {
  const { config, logger } = options;
  const env = options.env ?? process.env;
  const log = logger.child({ component: "keys-api" });
  const store = await openKeyStore(config.keys.databaseUrl, config.dataDir);
  let service: KeysService;
  try {
    service = await openService(store, env, config, options.clock);
  } catch (error) {
    await store.close();
    throw error;
  }
  const { pepper, seedKey } = loadServerSecrets(env, config.dataDir);
  const generated = [pepper.generated, seedKey.generated].filter(Boolean);
  if (generated.length > 0)
    log[options.local ? "info" : "warn"](
      { files: generated },
      "LIGHTFLEET_KEYS_PEPPER or LIGHTFLEET_KEYS_SEED_KEY is not set: using secrets kept in the data directory",
    );
  const sealed = await service.sealClearSeeds();
  if (sealed > 0) log.info({ sealed }, "TOTP seeds stored in clear are now encrypted");
  // Expired throttle rows and old audit entries go once an hour (and once at start).
  const prune = () =>
    service.prune().then(
      (dropped) => log.debug(dropped, "key store pruned"),
      (error: unknown) => log.warn({ err: error }, "key store pruning failed"),
    );
  void prune();
  const pruning = setInterval(() => void prune(), 3_600_000);
  pruning.unref();
  const app = createKeysApp({
    service,
    logger: log,
    metrics: createKeysMetrics(options.registry),
    secureCookies: config.keys.secureCookies,
    trustProxy: config.keys.trustProxy,
    tls: false,
  });
  const server = createServer(app);
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? config.keys.port, config.keys.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const url = `http://${config.keys.host.includes(":") ? `[${config.keys.host}]` : config.keys.host}:${port}`;
  log.info({ url, store: store.description }, "key API serving");
  return {
    url,
    store,
    service,
    async stop() {
      clearInterval(pruning);
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      });
      await store.close();
    },
  };
}
