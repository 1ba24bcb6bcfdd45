import type { PoolLabels } from "../../metrics/poolLabels.js";

/**
 * The name a pool runs under in the controller, its fleet, status writer and autoscaler: `namespace/network`, so the
 * same network may have a pool in each namespace one controller watches. Neither part can hold a `/` (a namespace and
 * a network name are DNS labels), so the key splits back unambiguously.
 */
export function poolKey(namespace: string, network: string): string {
  return `${namespace}/${network}`;
}

/** The namespace and network of a pool key (a key without a namespace is a network alone). */
export function splitPoolKey(key: string): { namespace: string; network: string } {
  const slash = key.indexOf("/");
  return slash < 0
    ? { namespace: "", network: key }
    : { namespace: key.slice(0, slash), network: key.slice(slash + 1) };
}

/**
 * The cluster controller's pool series: `{pool_namespace, network}`. Not `namespace`, which Prometheus sets on every
 * series from the scraped pod's namespace (the controller's) and would rename ours to `exported_namespace`.
 */
export const POOL_KEY_LABELS: PoolLabels = {
  names: ["pool_namespace", "network"],
  of: (key) => {
    const { namespace, network } = splitPoolKey(key);
    return { pool_namespace: namespace, network };
  },
};
