import type { V1Pod } from "@kubernetes/client-node";
import type { FleetMember } from "../../fleet/fleet.js";
import { IN_SYNC_CONDITION, RESTART_ANNOTATION } from "../api/crds.js";

/** How the pods of one LightNodePool are reached and routed. */
export interface PoolBinding {
  /** The name the pool runs under in the fleet (poolKey: namespace/network). */
  key: string;
  network: string;
  namespace: string;
  /** Label selector in query form (`a=b,c=d`). */
  labelSelector: string;
  rpcPort: number;
  wsPort?: number;
  workload: { kind: "StatefulSet" | "Deployment"; name: string };
}

export function hasReadinessGate(pod: V1Pod): boolean {
  return (pod.spec?.readinessGates ?? []).some((g) => g.conditionType === IN_SYNC_CONDITION);
}

export function inSyncStatus(pod: V1Pod): "True" | "False" | undefined {
  const condition = pod.status?.conditions?.find((c) => c.type === IN_SYNC_CONDITION);
  return condition?.status === "True" ? "True" : condition ? "False" : undefined;
}

function time(value: unknown): number | undefined {
  if (value instanceof Date) return value.getTime();
  if (typeof value === "string") {
    const ms = Date.parse(value);
    return Number.isNaN(ms) ? undefined : ms;
  }
  return undefined;
}

/**
 * A pod as a fleet member: only a running pod with an IP and the readiness gate; the incarnation starts when its
 * containers last started (a container restart is a new incarnation, as a pod replacement is).
 */
export function memberOf(pod: V1Pod, pool: PoolBinding): FleetMember | undefined {
  const name = pod.metadata?.name;
  const ip = pod.status?.podIP;
  if (!name || !ip || !hasReadinessGate(pod)) return undefined;
  const host = ip.includes(":") ? `[${ip}]` : ip;
  const started = Math.max(
    time(pod.status?.startTime) ?? 0,
    ...(pod.status?.containerStatuses ?? []).map((c) => time(c.state?.running?.startedAt) ?? 0),
  );
  return {
    name,
    network: pool.network,
    httpUrl: `http://${host}:${pool.rpcPort}`,
    wsUrl: `ws://${host}:${pool.wsPort ?? pool.rpcPort}`,
    startedAt: started,
    routed: inSyncStatus(pod) === "True",
    restarting: pod.metadata?.deletionTimestamp !== undefined,
    restarts: [],
    ...(pod.metadata?.annotations?.[RESTART_ANNOTATION] !== undefined ? { restartRequested: true } : {}),
  };
}

/**
 * The strategic-merge patch of pods/status that sets the in-sync condition, or undefined when it already says so:
 * patches only on change, and lastTransitionTime moves only when the status flips.
 */
export function readinessPatch(pod: V1Pod, routed: boolean, now: number): object | undefined {
  const wanted = routed ? "True" : "False";
  if (inSyncStatus(pod) === wanted) return undefined;
  return {
    status: {
      conditions: [
        {
          type: IN_SYNC_CONDITION,
          status: wanted,
          lastTransitionTime: new Date(now).toISOString().replace(/\.\d{3}Z$/, "Z"),
          reason: routed ? "InSync" : "OutOfSync",
          message: routed
            ? "lightfleet: the node follows the reference head"
            : "lightfleet: the node is not in sync; see its LightNode",
        },
      ],
    },
  };
}
