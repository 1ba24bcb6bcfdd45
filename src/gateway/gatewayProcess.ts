import type { Registry } from "prom-client";
import type { Config } from "../config/schema.js";
import type { EndpointSliceSource } from "../kubernetes/endpointSlices/endpointSliceSource.js";
import { staleCache } from "../kubernetes/api/cacheFreshness.js";
import type { Logger } from "../log/logger.js";
import { createKubeCacheMetrics } from "../metrics/kubeCacheMetrics.js";
import type { Gateway, GatewayOptions } from "./gateway.js";
import { CombinedUpstreamSource } from "./upstreams/combinedSource.js";
import { StaticUpstreamSource } from "./upstreams/staticSource.js";
import type { UpstreamSource } from "./upstreams/upstreamSource.js";

/** The `lightfleet gateway` command's flags. */
export interface GatewayFlags {
  config: string;
  port?: number;
  adminPort?: number;
}

export interface GatewayProcess {
  gateway: Gateway;
  source: UpstreamSource;
  slices: EndpointSliceSource | undefined;
}

/**
 * The gateway over each network's upstreams, a fixed list (`gateway.upstreams`) or, in a cluster, the ready pods
 * behind the pool's Service (`gateway.service`, followed through its EndpointSlices).
 */
export async function openGateway(
  config: Config,
  logger: Logger,
  registry: Registry,
  port: number | undefined,
  shared: Pick<GatewayOptions, "rateLimiter" | "connectionCap" | "filterWorkers"> = {},
): Promise<GatewayProcess> {
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
  // Loaded here, not with this module: a cluster's primary uses this module's helpers and never serves calls, so it
  // does not load (nor hold in its heap) the call path.
  const { startGateway } = await import("./gateway.js");
  const gateway = await startGateway({
    config,
    source,
    logger,
    registry,
    ...(port !== undefined ? { port } : {}),
    ...shared,
  });
  return { gateway, source, slices };
}

/** Networks without a served head yet. */
export function networksWithoutHead(
  config: Config,
  servedHead: (network: string) => number | null | undefined,
): string[] {
  return config.networks.filter((n) => servedHead(n.name) == null).map((n) => n.name);
}

/** The /healthz verdict on an EndpointSlice cache last confirmed at `synced`. */
export function slicesFresh(synced: number | undefined): { ok: boolean; message?: string } {
  const stale = staleCache("EndpointSlice", synced, Date.now());
  return stale ? { ok: false, message: stale } : { ok: true };
}

/** Resolves on the first SIGINT or SIGTERM. */
export function untilSignal(): Promise<void> {
  return new Promise<void>((resolve) => {
    process.once("SIGINT", () => resolve());
    process.once("SIGTERM", () => resolve());
  });
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
  const { EndpointSliceSource } = await import("../kubernetes/endpointSlices/endpointSliceSource.js");
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromDefault();
  return new EndpointSliceSource({
    kubeConfig,
    services,
    logger: logger.child({ component: "endpointslices" }),
    cacheMetrics: createKubeCacheMetrics(registry),
  });
}
