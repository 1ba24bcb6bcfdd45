import cluster from "node:cluster";
import { loadConfig } from "../config/loadConfig.js";
import { createLogger } from "../log/logger.js";
import { createRegistry } from "../metrics/registry.js";
import { serveUntilStopping } from "./adminAndShutdown.js";
import { workerCount } from "./cluster/availableCores.js";
import type { GatewayFlags } from "./gatewayProcess.js";
import { networksWithoutHead, openGateway } from "./gatewayProcess.js";

/**
 * `lightfleet gateway`, until SIGINT or SIGTERM. With `gateway.workers` above 1, this process becomes the cluster
 * primary (admin port only) and each forked worker, which runs this same command, serves the public port.
 */
export async function runGateway(flags: GatewayFlags): Promise<void> {
  const config = await loadConfig(flags.config);
  const logger = createLogger(config.log);
  if (config.gateway.replicas > 1 && cluster.isPrimary) {
    // A setting of `lightfleet up`, where one command starts every replica; here each replica is its own process.
    logger.warn(
      { replicas: config.gateway.replicas },
      "gateway.replicas is read by `lightfleet up` only: this process is one replica. Run more behind a load balancer with gateway.sharedState in Redis (the chart's gateway.replicas does this)",
    );
  }
  const workers = workerCount(config.gateway.workers);
  if (workers > 1 || cluster.isWorker) {
    const { runPrimary, runWorker } = await import("./cluster/gatewayCluster.js");
    if (cluster.isPrimary) await runPrimary(config, logger, flags, workers);
    else await runWorker(config, logger, flags);
    return;
  }
  const registry = createRegistry();
  const { gateway, source, slices } = await openGateway(config, logger, registry, flags.port);
  const admin = await serveUntilStopping(config, logger, flags, {
    registry,
    ready: () => {
      const missing = networksWithoutHead(config, (n) => gateway.servedHead(n));
      return missing.length === 0
        ? { ok: true }
        : { ok: false, message: `no head yet for ${missing.join(", ")}` };
    },
    ...(slices ? { slicesSynced: () => slices.oldestSync() } : {}),
    drain: () => gateway.drain(),
    describe: { url: gateway.url },
  });
  logger.info("gateway stopping: draining requests, closing WebSockets");
  await gateway.stop();
  await source.close?.();
  await admin.close();
}
