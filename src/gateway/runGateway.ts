import { startAdminServer } from "../admin/adminServer.js";
import { loadConfig } from "../config/loadConfig.js";
import { createLogger } from "../log/logger.js";
import { createRegistry } from "../metrics/registry.js";
import { startGateway } from "./gateway.js";
import { StaticUpstreamSource } from "./upstreams/staticSource.js";

/** `lightfleet gateway`: the gateway over the static upstreams of the config, until SIGINT or SIGTERM. */
export async function runGateway(flags: {
  config: string;
  port?: number;
  adminPort?: number;
}): Promise<void> {
  const config = await loadConfig(flags.config);
  const logger = createLogger(config.log);
  const registry = createRegistry();
  const source = new StaticUpstreamSource(
    config.networks.flatMap((network) =>
      network.gateway.upstreams.map((u) => ({
        name: u.name,
        network: network.name,
        httpUrl: u.http,
        ...(u.ws ? { wsUrl: u.ws } : {}),
        routed: true,
      })),
    ),
  );
  const admin = await startAdminServer({
    host: config.admin.host,
    port: flags.adminPort ?? config.admin.port,
    registry,
    logger,
  });
  const gateway = await startGateway({
    config,
    source,
    logger,
    registry,
    ...(flags.port !== undefined ? { port: flags.port } : {}),
  });
  admin.addReadiness({
    name: "gateway",
    check: () => {
      const missing = config.networks
        .filter((n) => gateway.servedHead(n.name) === undefined)
        .map((n) => n.name);
      return missing.length === 0
        ? { ok: true }
        : { ok: false, message: `no head yet for ${missing.join(", ")}` };
    },
  });
  logger.info({ url: gateway.url, admin: admin.url }, "gateway serving");
  await new Promise<void>((resolve) => {
    process.once("SIGINT", () => resolve());
    process.once("SIGTERM", () => resolve());
  });
  logger.info("gateway stopping: draining requests, closing WebSockets");
  await gateway.stop();
  await admin.close();
}
