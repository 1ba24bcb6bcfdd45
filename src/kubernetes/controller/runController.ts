import { hostname } from "node:os";
import { KubeConfig } from "@kubernetes/client-node";
import { startAdminServer } from "../../admin/adminServer.js";
import { loadConfig } from "../../config/loadConfig.js";
import { createLogger } from "../../log/logger.js";
import { createRegistry } from "../../metrics/registry.js";
import { startClusterController } from "./clusterController.js";

/**
 * `lightfleet controller`: in the cluster (service account) or from the current kubeconfig context. Follows the
 * LightNodePools, runs the health controller and the autoscaler over their pods, acts only while it holds the Lease.
 */
export async function runController(flags: { config: string; adminPort?: number }): Promise<void> {
  const config = await loadConfig(flags.config);
  const logger = createLogger(config.log);
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromDefault();
  const registry = createRegistry();
  const leaseNamespace = process.env.POD_NAMESPACE ?? (config.controller.namespace || "default");

  const admin = await startAdminServer({
    host: config.admin.host,
    port: flags.adminPort ?? config.admin.port,
    registry,
    logger,
  });
  const running = startClusterController({
    config,
    kubeConfig,
    registry,
    logger,
    identity: process.env.POD_NAME ?? hostname(),
    leaseNamespace,
  });
  admin.addLiveness(running.liveness);
  admin.addReadiness(running.readiness);
  logger.info(
    { admin: admin.url, lease: `${leaseNamespace}/${config.controller.lease.name}` },
    "controller running",
  );

  await new Promise<void>((resolve) => {
    process.once("SIGINT", () => resolve());
    process.once("SIGTERM", () => resolve());
  });
  await running.stop();
  await admin.close();
}
