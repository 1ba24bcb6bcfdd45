/**
 * What the garbage collector does about owner references (background propagation): a dependent none of whose owners
 * exists any more (by uid, in its namespace or cluster-wide) is deleted; one that keeps an owner loses the references
 * to the owners that are gone.
 */
export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

export interface Owned {
  collection: string;
  metadata: { name: string; namespace?: string; uid?: string; ownerReferences?: OwnerReference[] };
}

export type CollectorAction =
  | { action: "delete"; collection: string; namespace: string; name: string }
  | { action: "dropOwners"; collection: string; namespace: string; name: string; keep: OwnerReference[] };

export function collectorActions(objects: readonly Owned[]): CollectorAction[] {
  const namespaceOf = new Map<string, string | undefined>();
  for (const o of objects) if (o.metadata.uid) namespaceOf.set(o.metadata.uid, o.metadata.namespace);
  const actions: CollectorAction[] = [];
  for (const o of objects) {
    const owners = o.metadata.ownerReferences ?? [];
    if (owners.length === 0) continue;
    const alive = owners.filter((ref) => {
      if (!namespaceOf.has(ref.uid)) return false;
      const ownerNamespace = namespaceOf.get(ref.uid);
      return ownerNamespace === undefined || ownerNamespace === o.metadata.namespace;
    });
    const where = { collection: o.collection, namespace: o.metadata.namespace ?? "", name: o.metadata.name };
    if (alive.length === 0) actions.push({ action: "delete", ...where });
    else if (alive.length < owners.length) actions.push({ action: "dropOwners", ...where, keep: alive });
  }
  return actions;
}
