import { z } from "zod";
import { duration } from "../duration.js";
import { dnsLabel } from "../dnsLabel.js";
import { httpUrl, wsUrl } from "../urls.js";
import { hedgeSchema, hungNodesSchema, responseCacheSchema } from "./latency.js";

/**
 * Where the state a client can observe across calls lives (filters, the per-address rate limit and caps, the
 * per-sender transaction limit, the served head's high-water mark): in this process (one replica), or in Redis (any
 * Redis or Valkey), shared by every replica behind one Service.
 */
export const sharedStateSchema = z.discriminatedUnion("backend", [
  z.strictObject({ backend: z.literal("memory") }),
  z.strictObject({
    backend: z.literal("redis"),
    /** redis://[user:password@]host:port[/db] or rediss:// (TLS); `${REDIS_URL}` reads it from the environment. */
    url: z.string().refine(
      (value) => {
        try {
          return ["redis:", "rediss:"].includes(new URL(value).protocol);
        } catch {
          return false;
        }
      },
      { message: "must be a redis:// or rediss:// URL" },
    ),
    /** Prefix of every key, so several gateways (networks, environments) can share one Redis. */
    keyPrefix: z.string().min(1).default("lightfleet:"),
    /** Time one Redis command may take before the call it serves goes on without it (see docs/gateway.md). */
    commandTimeout: duration.default(250),
  }),
]);
export type SharedStateConfig = z.infer<typeof sharedStateSchema>;

/** Gateway settings shared by every network (`gateway:` at the top level). */
export const gatewaySchema = z.strictObject({
  host: z.string().default("0.0.0.0"),
  port: z.number().int().min(0).max(65_535).default(8545),
  /**
   * `lightfleet gateway` only: processes serving the port (node:cluster). 1 serves in-process; more fork that many
   * workers, each with its own upstream connections, behind a primary that serves the admin port. `auto`: one per
   * core the process may use (its CPUs, fewer under a cgroup CPU limit).
   */
  workers: z.union([z.literal("auto"), z.number().int().min(1).max(256)]).default(1),
  /**
   * `lightfleet up` only: gateway processes behind one front address (the gateway's host and port), which spreads
   * fresh connections over them round robin. Above 1 they share their state through Redis: `sharedState` when it names
   * one, else a redis-server (from PATH) that `up` starts for them.
   */
  replicas: z.number().int().min(1).max(16).default(1),
  /** Filters, limits, caps and the head's high-water mark: in-process (default) or shared through Redis. */
  sharedState: sharedStateSchema.default({ backend: "memory" }),
  /** Largest HTTP request body, in bytes (HTTP 413 beyond). */
  maxBodyBytes: z.number().int().min(1).default(1_048_576),
  /** Most calls in one JSON-RPC batch. */
  maxBatchLength: z.number().int().min(1).default(100),
  /** Time a light node has to answer one call. */
  upstreamTimeout: duration.default(10_000),
  /** Head polling of each light node while its newHeads subscription is down. */
  headPollInterval: duration.default(1_000),
  /** Origins allowed by CORS ("*" for any: public endpoints serve browser dapps). */
  corsOrigins: z.array(z.string().min(1)).default(["*"]),
  /** Polled filters (eth_newFilter, eth_newBlockFilter) one client address may hold at once. */
  maxFiltersPerAddress: z.number().int().min(1).default(100),
  /** A filter not polled for this long is removed (geth: 5 minutes). */
  filterTimeout: duration.default(300_000),
  /** WebSocket: subscriptions per connection. */
  maxSubscriptionsPerConnection: z.number().int().min(1).default(100),
  /** WebSocket: bytes queued for a client that does not read before it is cut off. */
  maxBufferedBytes: z.number().int().min(1024).default(4_194_304),
  /** WebSocket: frames of one connection answered at once; beyond, reading pauses (TCP pushes back on the client). */
  maxInFlightPerConnection: z.number().int().min(1).default(64),
  /** WebSocket: ping period; a client that misses a pong is dropped. */
  pingInterval: duration.default(30_000),
  /** Time a client has to send one whole HTTP request, headers and body; slower senders are disconnected. */
  requestTimeout: duration.default(30_000),
  /**
   * On SIGTERM, time the gateway keeps serving with /readyz failing before it stops accepting, so that the endpoint
   * removal reaches every Service, ingress and load balancer first (0: stop at once). The chart sets it.
   */
  shutdownDelay: duration.default(0),
  /** Time in-flight requests get to finish on shutdown. */
  drainTimeout: duration.default(10_000),
  /** Behind a proxy (an ingress): a client's address is the last X-Forwarded-For entry, not the connection's peer. */
  trustForwardedFor: z.boolean().default(false),
  /**
   * WebSocket connections one client address may hold open (unlimited when absent); HTTP 429 on the upgrade beyond.
   * Counted over all workers, and over all replicas with `sharedState` in Redis.
   */
  maxWsConnectionsPerAddress: z.number().int().min(1).optional(),
  /**
   * Per-sender limit on eth_sendRawTransaction (off when absent): transactions one sending account may submit, as a
   * token bucket, whatever address they come from.
   */
  transactionLimit: z
    .strictObject({
      /** Transactions per second one sender may submit, sustained. */
      perSenderPerSecond: z.number().positive(),
      /** Transactions one sender may submit at once; defaults to one second's worth (at least 1). */
      burst: z.number().int().min(1).optional(),
    })
    .optional(),
  /**
   * Per-client-address rate limit, each batch item counting as one call (off when absent): one budget per address over
   * all workers, and over all replicas with `sharedState` in Redis.
   */
  rateLimit: z
    .strictObject({
      /** Calls per second one address may make, sustained. */
      requestsPerSecond: z.number().positive(),
      /** Calls one address may make at once after being idle; defaults to one second's worth. */
      burst: z.number().int().min(1).optional(),
    })
    .optional(),
});
export type GatewayConfig = z.infer<typeof gatewaySchema>;

/** Per-network gateway settings (`networks[].gateway:`). */
export const networkGatewaySchema = z.strictObject({
  /** Host names that route to this network at `/` and `/ws`. */
  hosts: z.array(z.string().min(1)).default([]),
  /** Path prefix that routes to this network (`<path>` and `<path>/ws`); defaults to `/<name>`. */
  path: z.string().startsWith("/").optional(),
  /** The network served at bare `/` and `/ws` when no host matches. */
  default: z.boolean().default(false),
  /** eth_getLogs may reach at most this many blocks below the served head. */
  getLogsMaxRange: z.number().int().min(0).default(1000),
  /**
   * eth_sendRawTransaction goes to every routed node; with this, to the network's reserved peers (the full nodes) as
   * well, so a transaction reaches the block producers' pools even if the light nodes do not pass it on.
   */
  sendTransactionsToPeers: z.boolean().default(false),
  /** Slow, hung and dead nodes: hedged reads, hung-node avoidance, the response cache (see latency.ts). */
  hedge: hedgeSchema.prefault({}),
  hungNodes: hungNodesSchema.prefault({}),
  cache: responseCacheSchema.prefault({}),
  /** Fixed upstreams, for a gateway run without a fleet (`lightfleet gateway`). */
  upstreams: z
    .array(z.strictObject({ name: z.string().min(1), http: httpUrl, ws: wsUrl.optional() }))
    .default([]),
  /**
   * In a cluster (`lightfleet gateway`): the pool's Service, whose EndpointSlices list its in-sync pods. The gateway
   * follows them with a watch and balances over the pods itself (per-node head tracking and WebSocket failover),
   * instead of over one Service address. Needs list/watch on endpointslices.
   */
  service: z
    .strictObject({
      name: dnsLabel,
      /** Defaults to the gateway's own namespace (POD_NAMESPACE), else `default`. */
      namespace: dnsLabel.optional(),
      /** Service port name for JSON-RPC over HTTP (else the first port). */
      httpPort: z.string().min(1).default("http"),
      /** Service port name for WebSocket (else the HTTP port). */
      wsPort: z.string().min(1).default("ws"),
    })
    .optional(),
});
export type NetworkGatewayConfig = z.infer<typeof networkGatewaySchema>;
