import { Counter } from "prom-client";
import type { Registry } from "prom-client";

/** The key API's routes as metric labels: fixed names, never raw paths (which carry key ids). */
export const KEYS_ROUTES = [
  "login",
  "twofactor",
  "logout",
  "create-key",
  "list-keys",
  "delete-key",
  "update-key",
  "account",
  "page",
  "other",
] as const;
export type KeysRoute = (typeof KEYS_ROUTES)[number];

export interface KeysMetrics {
  requests: Counter<"route" | "status">;
}

export function createKeysMetrics(registry: Registry): KeysMetrics {
  return {
    requests: new Counter({
      name: "lightfleet_keys_requests_total",
      help: "Key API requests by route and HTTP status.",
      labelNames: ["route", "status"],
      registers: [registry],
    }),
  };
}
