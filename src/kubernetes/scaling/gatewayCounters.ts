import type { PoolRef } from "../status/statusWriter.js";

/**
 * Why a pool may not read its rate from the gateway's counters, or undefined when it may. The counters name only the
 * network, so while pools of one network run in several namespaces they are the gateway namespace's pool's alone: any
 * other would be sized on traffic that is not its own.
 */
export function gatewayCountersProblem(
  pool: Pick<PoolRef, "network" | "namespace">,
  pools: ReadonlyArray<Pick<PoolRef, "network" | "namespace">>,
  gatewayNamespace: string,
): string | undefined {
  if (pool.namespace === gatewayNamespace) return undefined;
  const namespaces = new Set(pools.filter((p) => p.network === pool.network).map((p) => p.namespace));
  if (namespaces.size < 2) return undefined;
  return (
    `network ${pool.network} runs in namespaces ${[...namespaces].sort().join(", ")} and the gateway's counters ` +
    `(namespace ${gatewayNamespace}) name only the network; give this pool a Prometheus source ` +
    "(spec.scaling.source) that selects its namespace ({namespace})"
  );
}
