import type { BlockRef } from "../chain/blockRef.js";
import type { ResolvedHealthConfig } from "../config/sections/network.js";

/**
 * The health engine's inputs and outputs. The engine is a pure function of (observations, previous state, config,
 * clock) to (new state, node statuses, decisions); probes produce the observations and a fleet backend carries out
 * the decisions. Times are milliseconds since the epoch, from the injected clock.
 */

/** The state names are a contract (CRDs, metrics, dashboards, alerts). */
export const NODE_STATES = [
  "Starting",
  "Healthy",
  "Lagging",
  "Unresponsive",
  "Diverged",
  "Restarting",
  "CrashLoop",
] as const;
export type NodeState = (typeof NODE_STATES)[number];

/** What the probes know of one reserved full-node peer. */
export interface PeerObservation {
  name: string;
  reachable: boolean;
  /** eth_chainId as checked on connect; undefined until known. */
  chainId?: number;
  head?: BlockRef;
  /** When `head` was first seen (clock ms). */
  headSeenAt?: number;
  /** No head yet, and no error either: the first contact is under way (a controller or a pool just started). */
  pending?: boolean;
  /** Recent canonical hashes by height, for quorum and divergence checks. */
  recentHashes?: ReadonlyMap<number, string>;
}

/** The result of one probe round of one light node. */
export interface NodeObservation {
  name: string;
  /** When the current incarnation of the node started (clock ms). */
  startedAt: number;
  /** False when the probe failed or timed out. */
  reachable: boolean;
  error?: string;
  chainId?: number;
  head?: BlockRef;
  /** eth_syncing reported progress (true) or false. */
  syncing?: boolean;
  /** The node's hash at a settled height the engine asked for (see EngineOutput.checkHeight). */
  check?: { number: number; hash: string | null };
  /**
   * Set when this round brings no answer from the node: a probe is still outstanding, and the node last answered at
   * this time (clock ms; or, if it has not answered in this incarnation, when it was first probed). `reachable` is
   * false and the probe fields are absent. Rounds do not wait for a slow or hung node; the engine judges the silence.
   */
  unansweredSince?: number;
  /** A restart of this node is being carried out by the fleet backend. */
  restartInFlight?: boolean;
  /**
   * Whether the fleet currently routes traffic to this node (FleetMember.routed). Route/unroute decisions are made
   * against it; when absent, against what the engine decided last round. On a cold start (no previous state) a
   * routed node is taken to be Healthy, so a controller restart does not reshuffle routing.
   */
  routed?: boolean;
  /** Restart history (clock ms), as the backend keeps it, so budgets survive a controller restart. */
  restarts: ReadonlyArray<RestartRecord>;
}

export const RESTART_REASONS = ["lag", "stall", "unresponsive", "diverged", "manual"] as const;
export type RestartReason = (typeof RESTART_REASONS)[number];

export interface RestartRecord {
  at: number;
  reason: RestartReason;
}

export interface ReferenceHead extends BlockRef {
  /** When this head was adopted (clock ms). */
  seenAt: number;
  /** Peers that agreed on it. */
  peers: string[];
}

export const SYSTEMIC_CAUSES = [
  "no-peer-reachable",
  "peers-halted",
  "peers-disagree",
  "pool-mostly-bad",
] as const;
export type SystemicCause = (typeof SYSTEMIC_CAUSES)[number];

/**
 * What one probe round says of a node, before hysteresis: `ok`, or the most serious problem seen. Machine-readable
 * reason for LightNode status, Events and logs.
 */
export type ConditionKind =
  | "ok"
  | "unresponsive"
  | "wrong-chain"
  | "hash-mismatch"
  | "no-head"
  | "height-zero"
  | "lag"
  | "stall"
  | "syncing"
  /** No answer this round, for less than a block plus a probe interval: no evidence either way. */
  | "awaiting";

export interface NodeStatus {
  name: string;
  state: NodeState;
  /** Whether the node should receive traffic after this round (kept as it was during a systemic failure). */
  routed: boolean;
  /** This round's condition (the state lags behind it by the hysteresis). */
  reason?: ConditionKind;
  head?: number;
  lagBlocks?: number;
  lagSeconds?: number;
  /** Human-readable reason for the state, for LightNode status and logs. */
  message: string;
  /** When the state last changed (clock ms). */
  since: number;
}

export const DECISION_KINDS = ["route", "unroute", "restart", "transition"] as const;

export type Decision =
  | { kind: "route"; node: string }
  | { kind: "unroute"; node: string }
  | { kind: "restart"; node: string; reason: RestartReason }
  | { kind: "transition"; node: string; from: NodeState | undefined; to: NodeState; message: string };

/** What the engine needs to know of a network (from NetworkConfig). */
export interface NetworkParams {
  name: string;
  chainId: number;
  blockTimeMs: number;
  health: ResolvedHealthConfig;
}

/**
 * The engine's memory between rounds (hysteresis counters, state and since-times, reference history). Owned by
 * src/health; callers keep it opaque and hand back what the previous round returned.
 */
export interface NetworkHealthState {
  readonly [key: string]: unknown;
}

export interface EngineInput {
  now: number;
  network: NetworkParams;
  peers: ReadonlyArray<PeerObservation>;
  nodes: ReadonlyArray<NodeObservation>;
  previous?: NetworkHealthState;
}

export interface EngineOutput {
  state: NetworkHealthState;
  reference?: ReferenceHead;
  nodes: NodeStatus[];
  decisions: Decision[];
  /**
   * Set while the pool holds in a systemic failure: no restarts, routing kept as it was. The engine says when the hold
   * began (`since`) and when it ends at the latest (`holdUntil`, after failStaticMaxHold).
   */
  systemic?: { cause: SystemicCause; message: string; since?: number; holdUntil?: number; pending?: boolean };
  /** The systemic condition outlasted failStaticMaxHold: the hold is over and nodes are judged on their own. */
  failStaticReleased?: { cause: SystemicCause; message: string; since: number };
  /** The settled height whose hash the probes should fetch from every node next round (divergence check). */
  checkHeight?: number;
  /**
   * A round is due at this time: a node went over the lag threshold on the last block, and whether it stays over past
   * the block's delivery decides. The controller runs a round then (it would otherwise wait a probe interval).
   */
  nextRoundAt?: number;
  /** A head the reserved peers reported but the engine refused as the reference (jumped further than time allows). */
  ignoredReference?: { number: number; hash: string; peers: string[]; reason: "implausible-jump" };
}
