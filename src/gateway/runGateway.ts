import { startAdminServer } from "../admin/adminServer.js";
import { loadConfig } from "../config/loadConfig.js";
import { createLogger } from "../log/logger.js";
import { createRegistry } from "../metrics/registry.js";
import { startGateway } from "./gateway.js";
import type { Config } from "../config/schema.js";
import type { EndpointSliceSource } from "../fleet/kubernetes/endpointSliceSource.js";
import type { Logger } from "../log/logger.js";
import { createKubeCacheMetrics } from "../metrics/kubeCacheMetrics.js";
import type { Registry } from "prom-client";
import { CombinedUpstreamSource } from "./upstreams/combinedSource.js";
import { StaticUpstreamSource } from "./upstreams/staticSource.js";
import type { UpstreamSource } from "./upstreams/upstreamSource.js";

/** A Service's EndpointSlices this old (no list, event or accepted watch since) fail /healthz. */
const STALE_CACHE_MS = 10 * 60_000;

/**
 * `lightfleet gateway`, until SIGINT or SIGTERM: the gateway over each network's upstreams, a fixed list
 * (`gateway.upstreams`) or, in a cluster, the ready pods behind the pool's Service (`gateway.service`, followed through
 * its EndpointSlices).
 */
export async function runGateway(flags: {
  config: string;
  port?: number;
  adminPort?: number;
}): Promise<void> {
  const config = await loadConfig(flags.config);
  const logger = createLogger(config.log);
  const registry = createRegistry();
  const fixed = new StaticUpstreamSource(
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
  const slices = await endpointSlices(config, logger, registry);
  const source: UpstreamSource = slices ? new CombinedUpstreamSource([fixed, slices]) : fixed;
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
  if (slices)
    admin.addLiveness({
      name: "endpointslices",
      check: () => {
        const synced = slices.oldestSync();
        const age = synced === undefined ? 0 : Date.now() - synced;
        return age < STALE_CACHE_MS
          ? { ok: true }
          : { ok: false, message: `EndpointSlice cache not refreshed for ${Math.round(age / 1000)} s` };
      },
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
  await source.close?.();
  await admin.close();
}

/** The EndpointSlice source for the networks that name a Service, loaded only when one does. */
async function endpointSlices(
  config: Config,
  logger: Logger,
  registry: Registry,
): Promise<EndpointSliceSource | undefined> {
  const services = config.networks.flatMap((network) => {
    const service = network.gateway.service;
    if (!service) return [];
    return [
      {
        network: network.name,
        namespace: service.namespace ?? process.env.POD_NAMESPACE ?? "default",
        service: service.name,
        httpPortName: service.httpPort,
        wsPortName: service.wsPort,
      },
    ];
  });
  if (services.length === 0) return undefined;
  const { KubeConfig } = await import("@kubernetes/client-node");
  const { EndpointSliceSource } = await import("../fleet/kubernetes/endpointSliceSource.js");
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromDefault();
  return new EndpointSliceSource({
    kubeConfig,
    services,
    logger: logger.child({ component: "endpointslices" }),
    cacheMetrics: createKubeCacheMetrics(registry),
  });
}
