import cluster from "node:cluster";
import { startAdminServer } from "../admin/adminServer.js";
import { loadConfig } from "../config/loadConfig.js";
import { createLogger } from "../log/logger.js";
import { createRegistry } from "../metrics/registry.js";
import { networksWithoutHead, openGateway, slicesFresh } from "./gatewayProcess.js";
import { GracefulShutdown } from "./gracefulShutdown.js";

export interface GatewayFlags {
  config: string;
  port?: number;
  adminPort?: number;
}

/**
 * `lightfleet gateway`, until SIGINT or SIGTERM. With `gateway.workers` above 1, this process becomes the cluster
 * primary (admin port only) and each forked worker, which runs this same command, serves the public port.
 */
export async function runGateway(flags: GatewayFlags): Promise<void> {
  const config = await loadConfig(flags.config);
  const logger = createLogger(config.log);
  if (config.gateway.workers > 1 || cluster.isWorker) {
    const { runPrimary, runWorker } = await import("./cluster/gatewayCluster.js");
    if (cluster.isPrimary) await runPrimary(config, logger, flags);
    else await runWorker(config, logger, flags);
    return;
  }
  const registry = createRegistry();
  const { gateway, source, slices } = await openGateway(config, logger, registry, flags.port);
  const admin = await startAdminServer({
    host: config.admin.host,
    port: flags.adminPort ?? config.admin.port,
    registry,
    logger,
  });
  if (slices) admin.addLiveness({ name: "endpointslices", check: () => slicesFresh(slices.oldestSync()) });
  admin.addReadiness({
    name: "gateway",
    check: () => {
      const missing = networksWithoutHead(config, (n) => gateway.servedHead(n));
      return missing.length === 0
        ? { ok: true }
        : { ok: false, message: `no head yet for ${missing.join(", ")}` };
    },
  });
  const shutdown = new GracefulShutdown(config.gateway.shutdownDelay, logger);
  admin.addReadiness(shutdown.readiness);
  logger.info({ url: gateway.url, admin: admin.url }, "gateway serving");
  await shutdown.untilStopping(() => gateway.drain());
  logger.info("gateway stopping: draining requests, closing WebSockets");
  await gateway.stop();
  await source.close?.();
  await admin.close();
}
