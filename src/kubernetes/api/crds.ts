/**
 * TypeScript shapes of the lightfleet.io/v1alpha1 custom resources. The schemas that the API server enforces are
 * charts/lightfleet/crds/*.yaml; tests validate every status the controller writes against them.
 */
import type { z } from "zod";
import type { PresetName } from "../../config/presets.js";
import type { healthSchema } from "../../config/sections/health.js";
import type { PeerConfig } from "../../config/sections/network.js";
import type { scalingSchema } from "../../config/sections/scaling.js";
import type { NodeState, RestartReason } from "../../health/types.js";

export const GROUP = "lightfleet.io";
export const VERSION = "v1alpha1";
export const API_VERSION = `${GROUP}/${VERSION}`;
export const POOL_PLURAL = "lightnodepools";
export const NODE_PLURAL = "lightnodes";
/** The pod readiness gate through which the controller routes traffic. */
export const IN_SYNC_CONDITION = "lightfleet.io/in-sync";
/**
 * A pod annotated with this (any value; `lightfleet node restart` writes the time) is restarted by the controller at
 * once, by eviction, outside the restart budget. The pod it is on goes, and the annotation with it.
 */
export const RESTART_ANNOTATION = "lightfleet.io/restart";

export interface ObjectMeta {
  name: string;
  namespace?: string;
  uid?: string;
  generation?: number;
  resourceVersion?: string;
  creationTimestamp?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: OwnerReference[];
}

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

/** metav1.Condition. */
export interface Condition {
  type: string;
  status: "True" | "False" | "Unknown";
  observedGeneration?: number;
  lastTransitionTime: string;
  reason: string;
  message: string;
}

export const POOL_CONDITIONS = [
  "Ready",
  "Degraded",
  "PeersReachable",
  "ScalingActive",
  "SpecAccepted",
] as const;
export type PoolConditionType = (typeof POOL_CONDITIONS)[number];

export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: {
    key: string;
    operator: "In" | "NotIn" | "Exists" | "DoesNotExist";
    values?: string[];
  }[];
}

export interface LightNodePoolSpec {
  network: string;
  chainId: number;
  workloadRef: { apiVersion?: "apps/v1"; kind: "StatefulSet" | "Deployment"; name: string };
  selector: LabelSelector;
  rpcPort?: number;
  wsPort?: number;
  /** The config format's network options, as charts/lightfleet/crds (generated from the same schema) takes them. */
  preset?: PresetName;
  blockTime?: string | number;
  reservedPeers: (Omit<PeerConfig, "name"> & { name?: string })[];
  /** Durations as "2s" or seconds; unset fields take the controller's defaults. */
  health?: z.input<typeof healthSchema>;
  scaling?: z.input<typeof scalingSchema>;
}

export interface LightNodePoolStatus {
  observedGeneration?: number;
  conditions?: Condition[];
  referenceHead?: { number: number; hash: string; time: string };
  replicas?: number;
  healthyReplicas?: number;
  /** "healthy/total", for the printer column. */
  healthySummary?: string;
  nodesByState?: Partial<Record<NodeState, number>>;
  systemicCause?: string;
  desiredReplicas?: number;
  requestRate?: number;
  scalingReason?: string;
  /**
   * The autoscaler's recommendations within the scale-down window (a decreasing staircase), so a new leader keeps to
   * the window instead of scaling down at once.
   */
  scaleDownRecommendations?: Array<{ time: string; replicas: number }>;
  /** The generation whose spec the controller runs: the latest it accepted (a refused spec leaves it as it was). */
  acceptedGeneration?: number;
  /**
   * That spec as JSON, so a controller that starts while the pool's spec is refused manages the pool as before (text,
   * so each merge patch replaces it whole).
   */
  acceptedSpec?: string;
}

export interface LightNodePool {
  apiVersion: typeof API_VERSION;
  kind: "LightNodePool";
  metadata: ObjectMeta;
  spec: LightNodePoolSpec;
  status?: LightNodePoolStatus;
}

export interface LightNodeStatus {
  network?: string;
  state?: NodeState;
  reason?: string;
  message?: string;
  routed?: boolean;
  head?: { number: number; hash?: string };
  lagBlocks?: number;
  lagSeconds?: number;
  restarts?: number;
  lastRestart?: { time: string; reason: RestartReason };
  /** Recent restarts, newest last (read back when a controller starts). */
  restartHistory?: Array<{ time: string; reason: RestartReason }>;
  lastTransitionTime?: string;
  lastProbeTime?: string;
  /** Ready: routed or not, with the state as reason. */
  conditions?: Condition[];
}

export interface LightNode {
  apiVersion: typeof API_VERSION;
  kind: "LightNode";
  metadata: ObjectMeta;
  spec: { pool: string; podName: string };
  status?: LightNodeStatus;
}
