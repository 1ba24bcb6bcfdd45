import type { RateSourceConfig } from "../config/sections/scaling.js";
import type { RateReading, RateSource } from "./rateReading.js";
import { GatewayScrapeSource } from "./sources/gatewayScrapeSource.js";
import { InProcessGatewaySource, type RequestCounters } from "./sources/inProcessGatewaySource.js";
import { PrometheusSource, promqlFor } from "./sources/prometheusSource.js";

export interface RateSourceDeps {
  clock: () => number;
  /** The gateway in this process (`lightfleet up`): `source: gateway` reads its counters. */
  gateway?: RequestCounters;
  /** The gateway pods' `/metrics` URLs (Kubernetes): `source: gateway` scrapes them. */
  discoverGateways?: () => Promise<ReadonlyArray<string>> | ReadonlyArray<string>;
}

export interface RateSourceNetwork {
  /** The network name, as the gateway's counters and `{network}` in a PromQL template name it. */
  name: string;
  /** A cluster pool's namespace: fills `{namespace}` in a PromQL template, and tells two pools of one network apart. */
  namespace?: string;
  scaling: { source: RateSourceConfig; rateWindow: number };
}

/**
 * The rate source of each network, from its `scaling.source`, made on first use and kept while that config is the
 * same (pools may come and go while the controller runs). Networks that read the gateway share one source, so one
 * scrape of the gateway pods serves every pool.
 */
export function createRateSources(deps: RateSourceDeps): (network: RateSourceNetwork) => RateSource {
  const windows = new Map<string, number>();
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
      gatewaySource = unavailableSource(
        "gateway",
        "no gateway counters in this process and no gateway discovery",
      );
    return gatewaySource;
  };
  const prometheus = new Map<string, { key: string; source: RateSource }>();
  return (network) => {
    windows.set(network.name, network.scaling.rateWindow);
    const config = network.scaling.source;
    if (config.type === "gateway") return gateway();
    const key = JSON.stringify(config);
    const { namespace } = network;
    const pool = namespace === undefined ? network.name : `${namespace}/${network.name}`;
    const kept = prometheus.get(pool);
    if (kept?.key === key) return kept.source;
    const source = new PrometheusSource({
      url: config.url,
      query: (name) => promqlFor(config.query, name, namespace),
      timeoutMs: config.timeout,
    });
    prometheus.set(pool, { key, source });
    return source;
  };
}

/** A source that always fails with `reason` (the autoscaler then holds the pool's size and says why). */
export function unavailableSource(kind: string, reason: string): RateSource {
  const reading: RateReading = { ok: false, failed: true, reason };
  return { kind, read: () => Promise.resolve(reading) };
}
