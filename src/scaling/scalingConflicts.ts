/**
 * Another autoscaler sizing the workload a pool scales: the controller then leaves scaling to it and reports the
 * conflict (pool status condition `ScalingActive` false, an Event, `lightfleet_pool_scaling_held{cause="conflict"}`).
 * Pure: the caller lists the HPAs and ScaledObjects of the workload's namespace (see kubernetes/scaling/listAutoscalers.ts).
 */

export interface WorkloadRef {
  /** "apps/v1" when absent. */
  apiVersion?: string;
  kind: string;
  name: string;
}

export interface ScaleTargetRef {
  apiVersion?: string;
  kind?: string;
  name?: string;
}

/** The fields read of an autoscaling/v2 HorizontalPodAutoscaler. */
export interface HorizontalPodAutoscalerLike {
  metadata?: { name?: string; ownerReferences?: ReadonlyArray<{ kind?: string; name?: string }> };
  spec?: { scaleTargetRef?: ScaleTargetRef };
}

/** The fields read of a KEDA (keda.sh/v1alpha1) ScaledObject. */
export interface ScaledObjectLike {
  metadata?: { name?: string };
  spec?: { scaleTargetRef?: ScaleTargetRef };
}

export interface ScalingConflict {
  kind: "HorizontalPodAutoscaler" | "ScaledObject";
  name: string;
}

export function findScalingConflicts(
  workload: WorkloadRef,
  autoscalers: {
    horizontalPodAutoscalers: ReadonlyArray<HorizontalPodAutoscalerLike>;
    scaledObjects: ReadonlyArray<ScaledObjectLike>;
  },
): ScalingConflict[] {
  const conflicts: ScalingConflict[] = [];
  for (const so of autoscalers.scaledObjects) {
    // KEDA's scaleTargetRef defaults to a Deployment in apps/v1.
    const ref = so.spec?.scaleTargetRef;
    if (ref && targets(workload, { apiVersion: "apps/v1", kind: "Deployment", ...ref })) {
      conflicts.push({ kind: "ScaledObject", name: so.metadata?.name ?? "(unnamed)" });
    }
  }
  for (const hpa of autoscalers.horizontalPodAutoscalers) {
    // KEDA makes an HPA for each ScaledObject; the ScaledObject is the one to report.
    if (hpa.metadata?.ownerReferences?.some((owner) => owner.kind === "ScaledObject")) continue;
    const ref = hpa.spec?.scaleTargetRef;
    if (ref && targets(workload, ref)) {
      conflicts.push({ kind: "HorizontalPodAutoscaler", name: hpa.metadata?.name ?? "(unnamed)" });
    }
  }
  return conflicts;
}

/** One line for the pool status, Events and logs. */
export function describeConflicts(conflicts: ReadonlyArray<ScalingConflict>): string {
  const names = conflicts.map((c) => `${c.kind} ${c.name}`).join(", ");
  return `${names} ${conflicts.length === 1 ? "scales" : "scale"} this workload; lightfleet leaves scaling to ${conflicts.length === 1 ? "it" : "them"}`;
}

function targets(workload: WorkloadRef, ref: ScaleTargetRef): boolean {
  if (ref.name !== workload.name || ref.kind !== workload.kind) return false;
  // Versions differ between clients (apps/v1, apps/v1beta2); the API group is what identifies the kind.
  return (
    apiGroup(ref.apiVersion ?? workload.apiVersion ?? "apps/v1") ===
    apiGroup(workload.apiVersion ?? "apps/v1")
  );
}

function apiGroup(apiVersion: string): string {
  const slash = apiVersion.indexOf("/");
  return slash < 0 ? "" : apiVersion.slice(0, slash);
}
