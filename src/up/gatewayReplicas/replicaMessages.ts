import type { Config } from "../../config/schema.js";
import type { Upstream } from "../../gateway/upstreams/upstreamSource.js";

/** What `up` tells a gateway replica process, over its IPC channel. */
export type ToReplica =
  /** Serve: the config (shared state in Redis), where to listen. */
  | { kind: "start"; config: Config; host: string; port: number; name: string }
  /** A network's upstreams as `up`'s fleet and controller have them now (level-based: the whole list). */
  | { kind: "upstreams"; network: string; upstreams: Upstream[] };

/** What a replica tells `up`. */
export type FromReplica =
  | { kind: "listening"; url: string }
  /** Sent every second: served heads (null: none yet) and calls sent to nodes, per network. */
  | { kind: "status"; heads: Record<string, number | null>; totals: Record<string, number> }
  | { kind: "failed"; message: string };

/** How often a replica reports its status. */
export const STATUS_EVERY_MS = 1_000;
