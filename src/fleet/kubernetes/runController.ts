import { hostname } from "node:os";
import { CoordinationV1Api, CustomObjectsApi, KubeConfig } from "@kubernetes/client-node";
import { startAdminServer } from "../../admin/adminServer.js";
import { loadConfig } from "../../config/loadConfig.js";
import { Controller } from "../../controller/controller.js";
import { createLogger } from "../../log/logger.js";
import { createControllerMetrics } from "../../metrics/controllerMetrics.js";
import { createLeaderMetrics } from "../../metrics/leaderMetrics.js";
import { createProbeMetrics } from "../../metrics/probeMetrics.js";
import { createRegistry } from "../../metrics/registry.js";
import { GROUP, POOL_PLURAL, VERSION } from "./crds.js";
import type { LightNodePool } from "./crds.js";
import { EventRecorder } from "./eventRecorder.js";
import { KubernetesFleet } from "./kubernetesFleet.js";
import { LeaderElector } from "./leaderElector.js";
import { poolNetwork } from "./poolNetworks.js";
import { StatusWriter } from "./statusWriter.js";

/** A pod cache older than this fails /healthz, so the kubelet restarts a controller whose watches are stuck. */
const STALE_CACHE_MS = 10 * 60_000;

/**
 * `lightfleet controller`: in the cluster (service account) or from the current kubeconfig context. Reads the
 * LightNodePools, runs the health controller over their pods, acts only while it holds the Lease.
 */
export async function runController(flags: { config: string; adminPort?: number }): Promise<void> {
  const config = await loadConfig(flags.config);
  const logger = createLogger(config.log);
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromDefault();
  const registry = createRegistry();

  const custom = kubeConfig.makeApiClient(CustomObjectsApi);
  const namespace = config.controller.namespace;
  const list = (await (namespace
    ? custom.listNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural: POOL_PLURAL })
    : custom.listClusterCustomObject({ group: GROUP, version: VERSION, plural: POOL_PLURAL }))) as {
    items: LightNodePool[];
  };
  const pools = [];
  for (const pool of list.items) {
    try {
      pools.push(poolNetwork(pool));
    } catch (error) {
      logger.error({ err: String(error) }, "LightNodePool skipped: invalid spec");
    }
  }
  logger.info(
    { pools: pools.map((p) => `${p.ref.namespace}/${p.ref.name}`) },
    "controller: LightNodePools found",
  );

  const fleet = new KubernetesFleet({ kubeConfig, pools: pools.map((p) => p.binding), logger });
  const leaseNamespace = process.env.POD_NAMESPACE ?? (namespace || "default");
  const elector = new LeaderElector({
    api: kubeConfig.makeApiClient(CoordinationV1Api),
    namespace: leaseNamespace,
    name: "lightfleet-controller",
    identity: process.env.POD_NAME ?? hostname(),
    logger,
    metrics: createLeaderMetrics(registry),
  });
  const refs = new Map(pools.map((p) => [p.ref.network, p.ref]));
  const identity = process.env.POD_NAME ?? hostname();
  const events = new EventRecorder(kubeConfig, { identity, logger });
  const writer = new StatusWriter(kubeConfig, { pools: () => refs, fleet, logger, events });
  const controller = new Controller({
    networks: pools.map((p) => p.network),
    fleet,
    logger,
    metrics: createControllerMetrics(registry),
    probeMetrics: createProbeMetrics(registry),
    isLeader: () => elector.isLeader(),
    onRound: (network, output) => writer.onRound(network, output),
  });

  const admin = await startAdminServer({
    host: config.admin.host,
    port: flags.adminPort ?? config.admin.port,
    registry,
    logger,
  });
  admin.addLiveness({
    name: "pod-cache",
    check: () => {
      const synced = fleet.oldestSync();
      if (synced === undefined) return { ok: true, message: "listing" };
      const age = Date.now() - synced;
      return age < STALE_CACHE_MS
        ? { ok: true }
        : { ok: false, message: `pod cache not refreshed for ${Math.round(age / 1000)} s` };
    },
  });
  admin.addReadiness(controller.readinessCheck());
  await fleet.loadRestartHistory();
  fleet.start();
  elector.start();
  controller.start();
  logger.info({ admin: admin.url, lease: `${leaseNamespace}/lightfleet-controller` }, "controller running");

  await new Promise<void>((resolve) => {
    process.once("SIGINT", () => resolve());
    process.once("SIGTERM", () => resolve());
  });
  await controller.stop();
  await elector.stop();
  fleet.stop();
  await admin.close();
}
