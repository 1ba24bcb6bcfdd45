import type { RateSourceConfig } from "../config/sections/scaling.js";
import type { RateReading, RateSource } from "./rateReading.js";
import { GatewayScrapeSource } from "./sources/gatewayScrapeSource.js";
import { InProcessGatewaySource, type RequestCounters } from "./sources/inProcessGatewaySource.js";
import { PrometheusSource } from "./sources/prometheusSource.js";

export interface RateSourceDeps {
  clock: () => number;
  /** The gateway in this process (`lightfleet up`): `source: gateway` reads its counters. */
  gateway?: RequestCounters;
  /** The gateway pods' `/metrics` URLs (Kubernetes): `source: gateway` scrapes them. */
  discoverGateways?: () => Promise<ReadonlyArray<string>> | ReadonlyArray<string>;
}

/**
 * The rate source of every network, from its `scaling.source`. Networks that read the gateway share one source, so
 * one scrape of the gateway pods serves every pool.
 */
export function createRateSources(
  networks: ReadonlyArray<{ name: string; scaling: { source: RateSourceConfig; rateWindow: number } }>,
  deps: RateSourceDeps,
): (network: string) => RateSource {
  const windows = new Map(networks.map((n) => [n.name, n.scaling.rateWindow]));
  const windowMs = (network: string) => windows.get(network) ?? 60_000;
  let gatewaySource: RateSource | undefined;
  const gateway = (): RateSource => {
    if (gatewaySource) return gatewaySource;
    if (deps.gateway)
      gatewaySource = new InProcessGatewaySource({ gateway: deps.gateway, clock: deps.clock, windowMs });
    else if (deps.discoverGateways)
      gatewaySource = new GatewayScrapeSource({
        discover: deps.discoverGateways,
        clock: deps.clock,
        windowMs,
      });
    else
      gatewaySource = unavailable("gateway", "no gateway counters in this process and no gateway discovery");
    return gatewaySource;
  };
  const sources = new Map<string, RateSource>();
  for (const network of networks) {
    const source = network.scaling.source;
    sources.set(
      network.name,
      source.type === "prometheus"
        ? new PrometheusSource({ url: source.url, query: source.query, timeoutMs: source.timeout })
        : gateway(),
    );
  }
  return (network) => sources.get(network) ?? unavailable("none", `network ${network} is not configured`);
}

function unavailable(kind: string, reason: string): RateSource {
  const reading: RateReading = { ok: false, failed: true, reason };
  return { kind, read: () => Promise.resolve(reading) };
}
