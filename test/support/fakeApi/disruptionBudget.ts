import { ApiError } from "./apiStatus.js";
import { matchesRequirements, selectorRequirements } from "./labelSelector.js";

interface Meta {
  name: string;
  namespace?: string;
  labels?: Record<string, string>;
  deletionTimestamp?: string;
  ownerReferences?: Array<{ kind: string; name: string; controller?: boolean }>;
}
export interface PodLike {
  metadata: Meta;
  status?: { phase?: string; conditions?: Array<{ type: string; status: string }> };
}
export interface BudgetLike {
  metadata: Meta;
  spec?: {
    selector?: Parameters<typeof selectorRequirements>[0];
    minAvailable?: number | string;
    maxUnavailable?: number | string;
    unhealthyPodEvictionPolicy?: "IfHealthyBudget" | "AlwaysAllow";
  };
}

/** What the disruption controller would write in a budget's status, computed now. */
export interface BudgetStatus {
  expectedPods: number;
  currentHealthy: number;
  desiredHealthy: number;
  disruptionsAllowed: number;
}

const isReady = (pod: PodLike) =>
  pod.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") === true;

/** `value` of an int-or-percent field scaled to `total`, rounded up as intstr.GetScaledValueFromIntOrPercent does. */
function scaled(value: number | string, total: number): number {
  if (typeof value === "number") return value;
  const percent = /^(\d+)%$/.exec(value);
  if (!percent) throw new ApiError(422, "Invalid", `invalid value for IntOrString: "${value}"`);
  return Math.ceil((Number(percent[1]) * total) / 100);
}

/**
 * A budget's status as the disruption controller computes it: healthy pods are the selected pods that are Ready and
 * not being deleted; the expected count is the selected pods for an integer minAvailable, else the replicas of the
 * pods' controllers (`scaleOf`). A pod without a controller whose scale is known makes the controller fail safe: no
 * disruption allowed.
 */
export function budgetStatus(
  budget: BudgetLike,
  pods: readonly PodLike[],
  scaleOf: (kind: string, namespace: string, name: string) => number | undefined,
): BudgetStatus {
  const requirements = selectorRequirements(budget.spec?.selector ?? {});
  const selected = pods.filter(
    (p) =>
      p.metadata.namespace === budget.metadata.namespace &&
      matchesRequirements(requirements, p.metadata.labels),
  );
  const currentHealthy = selected.filter((p) => isReady(p) && !p.metadata.deletionTimestamp).length;
  const { minAvailable, maxUnavailable } = budget.spec ?? {};
  const failSafe = { expectedPods: 0, currentHealthy, desiredHealthy: 0, disruptionsAllowed: 0 };
  let expectedPods = 0;
  let desiredHealthy = 0;
  if (typeof minAvailable === "number" && maxUnavailable === undefined) {
    expectedPods = selected.length;
    desiredHealthy = minAvailable;
  } else if (minAvailable !== undefined || maxUnavailable !== undefined) {
    const controllers = new Map<string, number>();
    for (const pod of selected) {
      const owner = pod.metadata.ownerReferences?.find((o) => o.controller);
      const replicas = owner && scaleOf(owner.kind, pod.metadata.namespace ?? "", owner.name);
      if (replicas === undefined || !owner) return failSafe;
      controllers.set(`${owner.kind}/${owner.name}`, replicas);
    }
    expectedPods = [...controllers.values()].reduce((a, b) => a + b, 0);
    desiredHealthy =
      maxUnavailable !== undefined
        ? Math.max(0, expectedPods - scaled(maxUnavailable, expectedPods))
        : scaled(minAvailable!, expectedPods);
  }
  const allowed = currentHealthy - desiredHealthy;
  return {
    expectedPods,
    currentHealthy,
    desiredHealthy,
    disruptionsAllowed: expectedPods <= 0 || allowed <= 0 ? 0 : allowed,
  };
}

/**
 * Whether the Eviction API lets `pod` go, as kube-apiserver's eviction REST does: pods that are not running (or already
 * being deleted) go at once; a pod under more than one budget is refused (500); an unready pod goes when its budget's
 * policy is AlwaysAllow or the budget is met; otherwise a budget with no disruption left refuses it (429).
 */
export function checkEviction(
  pod: PodLike,
  budgets: readonly BudgetLike[],
  pods: readonly PodLike[],
  scaleOf: (kind: string, namespace: string, name: string) => number | undefined,
): void {
  const phase = pod.status?.phase;
  if (pod.metadata.deletionTimestamp || phase === "Succeeded" || phase === "Failed" || phase === "Pending")
    return;
  const covering = budgets.filter(
    (b) =>
      b.metadata.namespace === pod.metadata.namespace &&
      matchesRequirements(selectorRequirements(b.spec?.selector ?? {}), pod.metadata.labels),
  );
  if (covering.length === 0) return;
  if (covering.length > 1)
    throw new ApiError(
      500,
      "InternalError",
      "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
    );
  const budget = covering[0]!;
  const status = budgetStatus(budget, pods, scaleOf);
  if (!isReady(pod)) {
    if (budget.spec?.unhealthyPodEvictionPolicy === "AlwaysAllow") return;
    if (status.currentHealthy >= status.desiredHealthy && status.desiredHealthy > 0) return;
  }
  if (status.disruptionsAllowed === 0)
    throw new ApiError(
      429,
      "TooManyRequests",
      "Cannot evict pod as it would violate the pod's disruption budget.",
      {
        causes: [
          {
            reason: "DisruptionBudget",
            message: `The disruption budget ${budget.metadata.name} needs ${status.desiredHealthy} healthy pods and has ${status.currentHealthy} currently`,
          },
        ],
      },
    );
}
