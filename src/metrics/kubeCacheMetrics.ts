import { Counter, Gauge } from "prom-client";
import type { Registry } from "prom-client";

export type WatchRestartReason = "expired" | "failed" | "silent" | "unanswered" | "closed";

export interface KubeCacheMetrics {
  /** Reports the age of one cache (`resource`: pods, lightnodepools, endpointslices; `scope`: network or namespace). */
  track(resource: string, scope: string, lastSync: () => number | undefined): () => void;
  watchRestart(resource: string, reason: WatchRestartReason): void;
}

/**
 * Health of the list + watch caches the controller and the gateway act on: a cache the API server has not confirmed
 * for minutes means decisions on old pods (alert LightfleetKubeCacheStale).
 */
export function createKubeCacheMetrics(registry: Registry, clock: () => number = Date.now): KubeCacheMetrics {
  const tracked = new Map<string, { resource: string; scope: string; lastSync: () => number | undefined }>();
  new Gauge({
    name: "lightfleet_kube_cache_age_seconds",
    help: "Seconds since the API server last confirmed a list + watch cache (list, event, bookmark or accepted watch); absent before the first list.",
    labelNames: ["resource", "scope"],
    registers: [registry],
    // Gateway workers each keep a cache: the stalest one counts.
    aggregator: "max",
    collect() {
      this.reset();
      for (const { resource, scope, lastSync } of tracked.values()) {
        const synced = lastSync();
        if (synced !== undefined) this.set({ resource, scope }, Math.max(0, (clock() - synced) / 1000));
      }
    },
  });
  const restarts = new Counter({
    name: "lightfleet_kube_watch_restarts_total",
    help: "Watches re-made, by reason: expired (410 Gone, relisted), failed, silent (watchdog), unanswered, closed (by the server).",
    labelNames: ["resource", "reason"],
    registers: [registry],
  });
  return {
    track(resource, scope, lastSync) {
      const key = `${resource}/${scope}`;
      tracked.set(key, { resource, scope, lastSync });
      return () => tracked.delete(key);
    },
    watchRestart(resource, reason) {
      restarts.inc({ resource, reason });
    },
  };
}
