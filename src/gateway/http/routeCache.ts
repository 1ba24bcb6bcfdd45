import { matchRoute } from "./routes.js";
import type { NetworkRoute, RouteMatch } from "./routes.js";

/** At most this many host and path pairs are kept: a client making up hosts or paths only empties the cache. */
const MAX_ENTRIES = 1_000;

/**
 * Routes by host and path (routes.ts), each pair matched once: clients send the same few. Looked up by host, then
 * path, so a request builds no key.
 */
export class RouteCache {
  private readonly byHost = new Map<string | undefined, Map<string, RouteMatch>>();
  private size = 0;
  /** The last pair asked for and its route: a client's requests on one connection name the same host and path. */
  private lastHost: string | undefined = undefined;
  private lastPath: string | undefined = undefined;
  private lastRoute: RouteMatch = undefined;

  constructor(private readonly routes: readonly NetworkRoute[]) {}

  of(host: string | undefined, path: string): RouteMatch {
    // Two string comparisons, where the maps would hash the host (a new string each request) first.
    if (host === this.lastHost && path === this.lastPath) return this.lastRoute;
    const route = this.lookUp(host, path);
    this.lastHost = host;
    this.lastPath = path;
    this.lastRoute = route;
    return route;
  }

  private lookUp(host: string | undefined, path: string): RouteMatch {
    let paths = this.byHost.get(host);
    const cached = paths?.get(path);
    if (cached !== undefined || paths?.has(path)) return cached;
    const route = matchRoute(this.routes, host, path);
    if (this.size >= MAX_ENTRIES) {
      this.byHost.clear();
      this.size = 0;
      paths = undefined;
    }
    if (!paths) {
      paths = new Map();
      this.byHost.set(host, paths);
    }
    paths.set(path, route);
    this.size++;
    return route;
  }
}
