import type { Config } from "../../config/schema.js";

/**
 * The config one of `workers` gateway processes serves with: the per-address rate limit is kept per process, so each
 * takes its share of the rate and burst (at least one call). Exact only while an address's connections spread evenly.
 */
export function workerConfig(config: Config, workers: number): Config {
  const limit = config.gateway.rateLimit;
  if (!limit || workers <= 1) return config;
  const burst = limit.burst ?? Math.ceil(limit.requestsPerSecond);
  return {
    ...config,
    gateway: {
      ...config.gateway,
      rateLimit: {
        requestsPerSecond: limit.requestsPerSecond / workers,
        burst: Math.max(1, Math.floor(burst / workers)),
      },
    },
  };
}
