import type { Registry } from "prom-client";
import type { GatewayConfig, SharedStateConfig } from "../../config/sections/gateway.js";
import type { Logger } from "../../log/logger.js";
import type { RateLimiter } from "../limits/ipRateLimiter.js";
import { RedisLeaseCap } from "./redisLeases.js";
import { RedisRateLimiter } from "./redisRateLimiter.js";
import { SharedStore } from "./sharedStore.js";

export type RedisSharedState = Extract<SharedStateConfig, { backend: "redis" }>;

/** The per-address and per-sender limits and the WebSocket cap of a gateway whose state is in Redis. */
export interface RedisState {
  store: SharedStore;
  rateLimiter: RateLimiter | undefined;
  senderLimiter: RateLimiter | undefined;
  connectionCap: RedisLeaseCap;
  close(): Promise<void>;
}

/** Connects to the configured Redis (in the background: calls never wait for it) and builds the limits on it. */
export function openRedisState(
  settings: GatewayConfig,
  shared: RedisSharedState,
  registry: Registry,
  logger: Logger,
): RedisState {
  const store = new SharedStore({
    url: shared.url,
    keyPrefix: shared.keyPrefix,
    commandTimeoutMs: shared.commandTimeout,
    registry,
    logger: logger.child({ component: "shared-store" }),
  });
  const { rateLimit, transactionLimit } = settings;
  const connectionCap = new RedisLeaseCap({ store, pool: "ws", max: settings.maxWsConnectionsPerAddress });
  return {
    store,
    rateLimiter:
      rateLimit &&
      new RedisRateLimiter({
        store,
        kind: "rate",
        ratePerSecond: rateLimit.requestsPerSecond,
        burst: rateLimit.burst ?? Math.ceil(rateLimit.requestsPerSecond),
      }),
    senderLimiter:
      transactionLimit &&
      new RedisRateLimiter({
        store,
        kind: "tx",
        ratePerSecond: transactionLimit.perSenderPerSecond,
        burst: transactionLimit.burst ?? Math.max(1, Math.ceil(transactionLimit.perSenderPerSecond)),
      }),
    connectionCap,
    async close() {
      connectionCap.close();
      await store.close();
    },
  };
}
