import type { CustomResourceKind } from "./customResources.js";

/** How the server treats a kind: where its status is written, and whether it counts spec generations. */
export interface Resource {
  custom?: CustomResourceKind;
  statusSubresource: boolean;
  tracksGeneration: boolean;
}

/** Built-in kinds with a status subresource: writes of the object leave its status alone, and /status the rest. */
const STATUS_SUBRESOURCE = new Set([
  "pods",
  "services",
  "nodes",
  "namespaces",
  "persistentvolumeclaims",
  "deployments",
  "statefulsets",
  "replicasets",
  "daemonsets",
  "jobs",
  "cronjobs",
  "horizontalpodautoscalers",
  "poddisruptionbudgets",
]);
const BUILTIN_GROUPS = new Set([
  "",
  "apps",
  "batch",
  "policy",
  "autoscaling",
  "coordination.k8s.io",
  "events.k8s.io",
  "discovery.k8s.io",
  "networking.k8s.io",
  "rbac.authorization.k8s.io",
  "apiextensions.k8s.io",
  "storage.k8s.io",
  "scheduling.k8s.io",
  "node.k8s.io",
  "authentication.k8s.io",
  "authorization.k8s.io",
  "certificates.k8s.io",
  "admissionregistration.k8s.io",
]);
/** Built-in kinds whose metadata.generation follows their spec. */
const GENERATION = new Set([
  "deployments",
  "statefulsets",
  "replicasets",
  "daemonsets",
  "poddisruptionbudgets",
]);
export const WORKLOAD_PLURALS: Record<string, string> = {
  StatefulSet: "statefulsets",
  Deployment: "deployments",
  ReplicaSet: "replicasets",
};
/** The ObjectMeta fields a write may carry; the API server drops any other. */
const OBJECT_META = new Set([
  "name",
  "generateName",
  "namespace",
  "selfLink",
  "uid",
  "resourceVersion",
  "generation",
  "creationTimestamp",
  "deletionTimestamp",
  "deletionGracePeriodSeconds",
  "labels",
  "annotations",
  "ownerReferences",
  "finalizers",
  "managedFields",
]);
const KINDS: Record<string, string> = {
  pods: "Pod",
  events: "Event",
  leases: "Lease",
  endpointslices: "EndpointSlice",
  statefulsets: "StatefulSet",
  deployments: "Deployment",
  poddisruptionbudgets: "PodDisruptionBudget",
  horizontalpodautoscalers: "HorizontalPodAutoscaler",
};

/** How the server treats the kind of a collection (`api/v1/pods`, `apis/G/V/PLURAL`). */
export function resourceOf(collection: string, crds: ReadonlyMap<string, CustomResourceKind>): Resource {
  const custom = crds.get(collection);
  if (custom) return { custom, statusSubresource: custom.statusSubresource, tracksGeneration: true };
  const plural = collection.split("/").at(-1)!;
  return { statusSubresource: STATUS_SUBRESOURCE.has(plural), tracksGeneration: GENERATION.has(plural) };
}

/** Whether an API group is served: the built-in ones (the core group is "") and those of the CRDs. */
export function servedGroup(group: string, resource: Resource): boolean {
  return BUILTIN_GROUPS.has(group) || resource.custom !== undefined;
}

/** The parts of an object whose change is a new generation. */
export function specOf(o: Record<string, unknown>, resource: Resource): unknown {
  if (!resource.custom) return o.spec;
  const { metadata: _m, status, ...rest } = o;
  return resource.statusSubresource ? rest : { ...rest, status };
}

/** ObjectMeta as the API server decodes it: fields it does not know are dropped. */
export function objectMeta(metadata: object | undefined): Record<string, unknown> {
  return Object.fromEntries(Object.entries(metadata ?? {}).filter(([k]) => OBJECT_META.has(k)));
}

/** "api/v1/pods" -> "v1", "apis/apps/v1/statefulsets" -> "apps/v1". */
export const apiVersionOf = (collection: string) =>
  collection.replace(/^apis?\//, "").replace(/\/[^/]+$/, "");

/** The kind of a collection's objects, for list and bookmark answers. */
export function kindOf(collection: string, crds: ReadonlyMap<string, CustomResourceKind>): string {
  const plural = collection.split("/").at(-1)!;
  return (
    crds.get(collection)?.kind ??
    KINDS[plural] ??
    plural.replace(/s$/, "").replace(/^./, (c) => c.toUpperCase())
  );
}
