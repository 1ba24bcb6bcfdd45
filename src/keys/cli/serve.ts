import { startAdminServer } from "../../admin/adminServer.js";
import { loadConfig, parseConfig } from "../../config/loadConfig.js";
import { createLogger } from "../../log/logger.js";
import { createRegistry } from "../../metrics/registry.js";
import { startKeysApi } from "../runKeysApi.js";

/** `lightfleet keys-api`: the key API with its admin endpoints, until SIGINT or SIGTERM. */
export async function serveKeysApi(flags: {
  config?: string;
  port?: number;
  adminPort?: number;
}): Promise<void> {
  const config = flags.config ? await loadConfig(flags.config) : parseConfig({});
  const logger = createLogger(config.log);
  const registry = createRegistry();
  const keys = await startKeysApi({
    config,
    logger,
    registry,
    ...(flags.port !== undefined ? { port: flags.port } : {}),
  });
  const admin = await startAdminServer({
    host: config.admin.host,
    port: flags.adminPort ?? config.admin.port,
    registry,
    logger,
  });
  admin.addReadiness({ name: "key-store", check: () => ({ ok: true }) });
  // As the gateway's and the controller's, the start line says where the probes and metrics answer.
  logger.info({ url: keys.url, admin: admin.url }, "key API admin serving");
  await new Promise<void>((resolve) => {
    process.once("SIGINT", () => resolve());
    process.once("SIGTERM", () => resolve());
  });
  await keys.stop();
  await admin.close();
}
