import { z } from "zod";
import { duration } from "../duration.js";

/**
 * Hedged reads (`networks[].gateway.hedge`): an idempotent read a node has not answered after the delay learnt from
 * that node's recent answers to calls of the same kind goes to a second node as well; the first answer wins.
 */
export const hedgeSchema = z
  .strictObject({
    enabled: z.boolean().default(true),
    /**
     * The quantile of the node's recent latency after which a read is hedged (one hedge). Unset: from the budget
     * (see hedgeQuantiles): 1 - budget, so that the reads slower than that are about as many as the budget allows
     * extra calls; from a budget of 0.15 on, two hedges, after the 1 - 0.75 budget and 1 - 0.6 budget quantiles.
     */
    quantile: z.number().min(0.5).max(0.999).optional(),
    /** Never hedged sooner than this (nor before the node has a history: then maxDelay). */
    minDelay: duration.default(20),
    /** Never later than this. */
    maxDelay: duration.default(1_000),
    /**
     * Extra upstream calls (hedges, and reads moved off a hung node while another attempt is in flight) as a share
     * of the clients' calls sent to nodes: a token bucket, empty at start.
     */
    budget: z.number().min(0).max(1).default(0.1),
    /** Extra calls that may go at once after a spell of calls that needed none (the bucket's size). */
    burst: z.number().int().min(1).default(10),
    /** Methods never hedged besides those that are not idempotent (eth_sendRawTransaction). */
    excludeMethods: z.array(z.string().min(1)).default([]),
  })
  .refine((hedge) => hedge.minDelay <= hedge.maxDelay, {
    message: "minDelay must not exceed maxDelay",
    path: ["minDelay"],
  });
export type HedgeConfig = z.output<typeof hedgeSchema>;

/**
 * Hung nodes (`networks[].gateway.hungNodes`): a node with a call outstanding longer than `multiplier` times its own
 * recent p99 (kept within min..max) gets no new calls until it answers, and reads waiting on it are sent again to
 * another node. A node whose call just failed gets none for `failureCooldown`, while another node can serve.
 */
export const hungNodesSchema = z
  .strictObject({
    multiplier: z.number().min(1).default(4),
    min: duration.default(300),
    max: duration.default(1_500),
    failureCooldown: duration.default(2_000),
  })
  .refine((hung) => hung.min <= hung.max, { message: "min must not exceed max", path: ["min"] });
export type HungNodesConfig = z.output<typeof hungNodesSchema>;

/**
 * The response cache (`networks[].gateway.cache`): answers that cannot change (by block hash, at or below the peers'
 * finalized block), kept in process, bounded in bytes.
 */
export const responseCacheSchema = z.strictObject({
  enabled: z.boolean().default(true),
  /** Bytes of answers kept (least recently used go first). */
  maxBytes: z.number().int().min(1024).default(33_554_432),
  /** Largest single answer kept. */
  maxEntryBytes: z.number().int().min(64).default(1_048_576),
  /**
   * With `gateway.sharedState` in Redis: answers about final blocks are kept there too, so a replica serves a final
   * answer another replica fetched (each checks the block against its own nodes' chain before serving it).
   */
  shared: z.boolean().default(true),
  /** How long a final answer stays in Redis (answers about final blocks never change; this bounds Redis memory). */
  sharedTtl: duration.default(3_600_000),
});
export type ResponseCacheConfig = z.output<typeof responseCacheSchema>;
