import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { Registry } from "prom-client";
import type { Config } from "../config/schema.js";
import type { Logger } from "../log/logger.js";
import { createKeysMetrics } from "../metrics/keysMetrics.js";
import { loadPepper } from "./crypto/secrets.js";
import { createKeysApp } from "./http/app.js";
import { KeysService } from "./service.js";
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
  const { pepper, generated } = loadPepper(env, config.dataDir);
  if (generated)
    log[options.local ? "info" : "warn"](
      { file: generated },
      "LIGHTFLEET_KEYS_PEPPER is not set: using a pepper kept in the data directory (set the variable when replicas share a database)",
    );
  const service = new KeysService({ store, pepper, ...(options.clock ? { clock: options.clock } : {}) });
  const app = createKeysApp({
    service,
    logger: log,
    metrics: createKeysMetrics(options.registry),
    secureCookies: config.keys.secureCookies,
    trustProxy: config.keys.trustProxy,
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
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      });
      await store.close();
    },
  };
}
