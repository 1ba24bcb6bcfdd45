import { Registry, collectDefaultMetrics } from "prom-client";

export const METRIC_PREFIX = "lightfleet_";

/**
 * How often the event loop's delay is sampled (the `nodejs_eventloop_lag_*` metrics). prom-client's default, 10 ms,
 * is a timer that wakes an idle process 100 times a second: about 4 ms of CPU per second per process here, more than
 * an idle gateway's own work. A block of the loop shorter than this may go unseen by the percentiles.
 */
export const EVENT_LOOP_SAMPLE_MS = 100;

/** One registry per process; components register their metric sets on it. */
export function createRegistry(options: { defaultMetrics?: boolean } = {}): Registry {
  const registry = new Registry();
  if (options.defaultMetrics ?? true)
    collectDefaultMetrics({
      register: registry,
      prefix: METRIC_PREFIX,
      eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS,
    });
  return registry;
}
