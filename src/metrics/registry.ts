import { Registry, collectDefaultMetrics } from "prom-client";

export const METRIC_PREFIX = "lightfleet_";

/** One registry per process; components register their metric sets on it. */
export function createRegistry(options: { defaultMetrics?: boolean } = {}): Registry {
  const registry = new Registry();
  if (options.defaultMetrics ?? true) collectDefaultMetrics({ register: registry, prefix: METRIC_PREFIX });
  return registry;
}
