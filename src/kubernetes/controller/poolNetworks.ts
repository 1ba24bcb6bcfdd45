import { networkSchema } from "../../config/sections/network.js";
import type { NetworkConfig } from "../../config/sections/network.js";
import type { LabelSelector, LightNodePool, LightNodePoolSpec } from "../api/crds.js";
import type { PoolBinding } from "../pods/podRules.js";
import type { ScalingMemory } from "../../scaling/decideScale.js";
import type { PoolRef } from "../status/statusWriter.js";
import { poolKey } from "./poolKey.js";
import { selectorProblems } from "./selectorProblems.js";

/** A label selector in the query form the API takes (`a=b,c in (x,y),!d`). */
export function selectorString(selector: LabelSelector): string {
  const parts = Object.entries(selector.matchLabels ?? {}).map(([k, v]) => `${k}=${v}`);
  for (const e of selector.matchExpressions ?? []) {
    const values = (e.values ?? []).join(",");
    if (e.operator === "In") parts.push(`${e.key} in (${values})`);
    else if (e.operator === "NotIn") parts.push(`${e.key} notin (${values})`);
    else if (e.operator === "Exists") parts.push(e.key);
    else parts.push(`!${e.key}`);
  }
  return parts.join(",");
}

export interface PoolNetwork {
  /** The name the pool runs under (poolKey: namespace/network); `network.name` stays the network's own name. */
  key: string;
  network: NetworkConfig;
  binding: PoolBinding;
  ref: PoolRef;
}

/**
 * A LightNodePool as the controller runs it: the same network config a file would give (validated by the same
 * schema, so defaults and checks are one), how its pods are found, and where its status goes. An invalid pool is an
 * error naming the pool and the field.
 */
export function poolNetwork(pool: LightNodePool): PoolNetwork {
  const { spec } = pool;
  const where = `LightNodePool ${pool.metadata.namespace ?? ""}/${pool.metadata.name}`;
  const parsed = networkSchema.safeParse({
    name: spec.network,
    chainId: spec.chainId,
    ...(spec.preset !== undefined ? { preset: spec.preset } : {}),
    ...(spec.blockTime !== undefined ? { blockTime: spec.blockTime } : {}),
    reservedPeers: spec.reservedPeers.map((peer, i) => ({
      name: peer.name ?? `peer-${i}`,
      http: peer.http,
      ...(peer.ws ? { ws: peer.ws } : {}),
    })),
    health: spec.health ?? {},
    // A pool that says nothing of scaling is not resized: its rate and desired size are still reported.
    scaling: spec.scaling ? { ...spec.scaling } : { enabled: false },
  });
  const problems = [
    ...(parsed.success ? [] : parsed.error.issues.map((i) => `spec.${i.path.join(".")}: ${i.message}`)),
    ...selectorProblems(spec.selector),
  ];
  if (!parsed.success || problems.length > 0) throw new Error(`${where}: ${problems.join("; ")}`);
  const namespace = pool.metadata.namespace ?? "default";
  const key = poolKey(namespace, spec.network);
  return {
    key,
    network: parsed.data,
    binding: {
      key,
      network: spec.network,
      namespace,
      labelSelector: selectorString(spec.selector),
      rpcPort: spec.rpcPort ?? 8545,
      ...(spec.wsPort ? { wsPort: spec.wsPort } : {}),
      workload: { kind: spec.workloadRef.kind, name: spec.workloadRef.name },
    },
    ref: {
      key,
      network: spec.network,
      namespace,
      name: pool.metadata.name,
      ...(pool.metadata.uid ? { uid: pool.metadata.uid } : {}),
      generation: pool.metadata.generation ?? 0,
      accepted: { generation: pool.metadata.generation ?? 0, spec },
      ...scalingMemoryOf(pool),
    },
  };
}

/** The scale-down window the last leader wrote in the pool's status, when it is readable. */
function scalingMemoryOf(pool: LightNodePool): { scalingMemory?: ScalingMemory } {
  const written = pool.status?.scaleDownRecommendations;
  if (!Array.isArray(written) || written.length === 0) return {};
  const recommendations = written
    .map((r) => ({ at: Date.parse(r.time), replicas: r.replicas }))
    .filter((r) => Number.isFinite(r.at) && Number.isInteger(r.replicas));
  return recommendations.length > 0 ? { scalingMemory: { recommendations } } : {};
}

/**
 * A LightNodePool whose spec the controller refuses, and why (logged, and recorded as a Warning Event on the pool).
 * `runsGeneration` is set when the pool keeps running with the last spec it accepted.
 */
export interface RejectedPool {
  pool: LightNodePool;
  reason: "InvalidSpec" | "DuplicateNetwork";
  message: string;
  runsGeneration?: number;
}

/** The last spec the controller accepted for a pool (see lastAccepted). */
export interface AcceptedSpec {
  /** The pool object's uid: a pool deleted and created again under its name starts afresh. */
  uid: string | undefined;
  generation: number;
  spec: LightNodePoolSpec;
}

/** Where a pool's last accepted spec is remembered: by this replica, else in the status a controller wrote. */
export function lastAccepted(
  pool: LightNodePool,
  remembered: ReadonlyMap<string, AcceptedSpec>,
): Omit<AcceptedSpec, "uid"> | undefined {
  const mine = remembered.get(`${pool.metadata.namespace ?? ""}/${pool.metadata.name}`);
  const written = writtenAccepted(pool);
  if (mine && mine.uid === pool.metadata.uid && mine.generation >= (written?.generation ?? 0)) return mine;
  return written;
}

/**
 * The pools the controller runs, from every LightNodePool it sees: invalid specs are rejected with the field, and
 * when two pools of one namespace claim one network the older keeps it (creation time, then name), so a new pool
 * cannot take over a running network by accident. The same network in two namespaces is two pools (see poolKey).
 *
 * A pool whose new spec is refused fails safe, not open: it keeps running with the last spec the controller accepted
 * (REMEMBERED, or the copy in its status), so its nodes are still probed and a lagging one still leaves routing. A
 * pool never accepted runs nothing; its pods were never marked in sync, so the readiness gate keeps them unrouted.
 */
export function resolvePools(
  objects: readonly LightNodePool[],
  remembered: ReadonlyMap<string, AcceptedSpec> = new Map(),
): {
  pools: PoolNetwork[];
  rejected: RejectedPool[];
} {
  const key = (p: LightNodePool) => `${p.metadata.namespace ?? ""}/${p.metadata.name}`;
  const age = (p: LightNodePool) => Date.parse(p.metadata.creationTimestamp ?? "") || 0;
  const ordered = [...objects].sort((a, b) => age(a) - age(b) || key(a).localeCompare(key(b)));
  const pools: PoolNetwork[] = [];
  const rejected: RejectedPool[] = [];
  const owner = new Map<string, string>();
  for (const pool of ordered) {
    let resolved: PoolNetwork;
    try {
      resolved = poolNetwork(pool);
    } catch (error) {
      const message = (error as Error).message;
      const fallback = runAccepted(pool, lastAccepted(pool, remembered), message);
      if (!fallback) {
        rejected.push({
          pool,
          reason: "InvalidSpec",
          message: `${message}; no accepted spec to run, its pods are not routed`,
        });
        continue;
      }
      resolved = fallback;
      rejected.push({
        pool,
        reason: "InvalidSpec",
        message: resolved.ref.refusal!.message,
        runsGeneration: resolved.ref.accepted!.generation,
      });
    }
    const taken = owner.get(resolved.key);
    if (taken !== undefined) {
      rejected.push({
        pool,
        reason: "DuplicateNetwork",
        message: `LightNodePool ${key(pool)}: network ${resolved.ref.network} is already run by LightNodePool ${taken} in this namespace`,
      });
      continue;
    }
    owner.set(resolved.key, key(pool));
    pools.push(resolved);
  }
  return { pools, rejected };
}

/** The accepted spec a controller wrote in the pool's status, when it is there and readable. */
function writtenAccepted(pool: LightNodePool): Omit<AcceptedSpec, "uid"> | undefined {
  const { acceptedSpec, acceptedGeneration } = pool.status ?? {};
  if (acceptedSpec === undefined || acceptedGeneration === undefined) return undefined;
  try {
    return { generation: acceptedGeneration, spec: JSON.parse(acceptedSpec) as LightNodePoolSpec };
  } catch {
    return undefined;
  }
}

/** The pool run with an earlier accepted spec, marked refused; undefined when there is none that still resolves. */
function runAccepted(
  pool: LightNodePool,
  accepted: Omit<AcceptedSpec, "uid"> | undefined,
  message: string,
): PoolNetwork | undefined {
  // The network is immutable (the CRD says so): an accepted spec of another network is not this pool's.
  if (!accepted || accepted.spec.network !== pool.spec.network) return undefined;
  let resolved: PoolNetwork;
  try {
    resolved = poolNetwork({ ...pool, spec: accepted.spec });
  } catch {
    return undefined;
  }
  return {
    ...resolved,
    ref: {
      ...resolved.ref,
      accepted: { generation: accepted.generation, spec: accepted.spec },
      refusal: {
        reason: "InvalidSpec",
        message: `${message}; still running generation ${accepted.generation}, the last accepted spec`,
      },
    },
  };
}
