import type { RestartReason, RestartRecord } from "../health/types.js";

/** One light node as a fleet backend sees it: a child process in `up`, a pod in Kubernetes. */
export interface FleetMember {
  /** Stable name within its network (process member name, pod name). */
  name: string;
  network: string;
  /** JSON-RPC over HTTP. */
  httpUrl: string;
  /** JSON-RPC over WebSocket, when the node serves it. */
  wsUrl?: string;
  /** When the current incarnation started (ms since the epoch). */
  startedAt: number;
  /** Whether the member is in the set the gateway (or the Service) routes to. */
  routed: boolean;
  /** A restart is being carried out. */
  restarting: boolean;
  /** Restart history kept by the backend (survives a controller restart in Kubernetes). */
  restarts: RestartRecord[];
  /**
   * An operator asked for a restart (`lightfleet node restart`: the pod annotation RESTART_ANNOTATION in Kubernetes):
   * the controller restarts the member at once, outside the restart budget, which is the way out of CrashLoop.
   */
  restartRequested?: boolean;
}

export type RestartResult =
  /** The member is being restarted. */
  | { outcome: "restarted" }
  /** Refused for now (a PodDisruptionBudget said no); the controller tries again on a later round. */
  | { outcome: "deferred"; message: string }
  /** The member no longer exists. */
  | { outcome: "gone" };

/**
 * What the controller needs of a fleet, implemented by the process backend (`up`) and the Kubernetes backend.
 * Level-based: `members` returns current state; the other calls are idempotent.
 */
export interface Fleet {
  members(network: string): FleetMember[];
  setRouted(network: string, member: string, routed: boolean): Promise<void>;
  restart(network: string, member: string, reason: RestartReason): Promise<RestartResult>;
  scale(network: string, replicas: number): Promise<void>;
  /** Called whenever membership or routing changes; returns an unsubscribe function. */
  onChange(listener: (network: string) => void): () => void;
}
