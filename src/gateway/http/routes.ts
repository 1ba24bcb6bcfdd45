/** How one network is reached. */
export interface NetworkRoute {
  network: string;
  hosts: string[];
  /** Path prefix, e.g. "/mainnet". */
  path: string;
  default: boolean;
}

export type RouteMatch = { network: string; transport: "http" | "ws" } | undefined;

/**
 * Finds the network and transport of a request: a network's host owns `/` and `/ws`; its path prefix owns `<path>`
 * and `<path>/ws` on any host; the default network owns bare `/` and `/ws` when no host matched.
 */
export function matchRoute(
  routes: readonly NetworkRoute[],
  hostHeader: string | undefined,
  url: string,
): RouteMatch {
  const path = (url.split("?", 1)[0] ?? "/").replace(/\/+$/, "") || "/";
  const host = (hostHeader ?? "").toLowerCase().replace(/:\d+$/, "");
  const bare = (network: string): RouteMatch =>
    path === "/" ? { network, transport: "http" } : path === "/ws" ? { network, transport: "ws" } : undefined;
  const byHost = routes.find((r) => r.hosts.includes(host));
  if (byHost) {
    const match = bare(byHost.network);
    if (match) return match;
  }
  for (const route of routes) {
    if (path === route.path) return { network: route.network, transport: "http" };
    if (path === `${route.path}/ws`) return { network: route.network, transport: "ws" };
  }
  const fallback = routes.find((r) => r.default);
  return fallback && !byHost ? bare(fallback.network) : undefined;
}
