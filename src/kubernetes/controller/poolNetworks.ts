import { networkSchema } from "../../config/sections/network.js";
import type { NetworkConfig } from "../../config/sections/network.js";
import type { LabelSelector, LightNodePool } from "../api/crds.js";
import type { PoolBinding } from "../pods/podRules.js";
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
      generation: pool.metadata.generation ?? 0,
    },
  };
}

/** A LightNodePool the controller cannot run, and why (logged, and recorded as a Warning Event on the pool). */
export interface RejectedPool {
  pool: LightNodePool;
  reason: "InvalidSpec" | "DuplicateNetwork";
  message: string;
}

/**
 * The pools the controller runs, from every LightNodePool it sees: invalid specs are rejected with the field, and
 * when two pools of one namespace claim one network the older keeps it (creation time, then name), so a new pool
 * cannot take over a running network by accident. The same network in two namespaces is two pools (see poolKey).
 */
export function resolvePools(objects: readonly LightNodePool[]): {
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
      rejected.push({ pool, reason: "InvalidSpec", message: (error as Error).message });
      continue;
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
