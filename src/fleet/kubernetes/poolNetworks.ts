import { networkSchema } from "../../config/sections/network.js";
import type { NetworkConfig } from "../../config/sections/network.js";
import type { LabelSelector, LightNodePool } from "./crds.js";
import type { PoolBinding } from "./podRules.js";
import type { PoolRef } from "./statusWriter.js";

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
  // getLogsMaxRange is the gateway's; the rest of spec.health is the engine's.
  const { getLogsMaxRange: _gateway, ...health } = spec.health ?? {};
  const where = `LightNodePool ${pool.metadata.namespace ?? ""}/${pool.metadata.name}`;
  const parsed = networkSchema.safeParse({
    name: spec.network,
    chainId: spec.chainId,
    reservedPeers: spec.reservedPeers.map((peer, i) => ({
      name: peer.name ?? `peer-${i}`,
      http: peer.http,
      ...(peer.ws ? { ws: peer.ws } : {}),
    })),
    health,
  });
  if (!parsed.success)
    throw new Error(
      `${where}: ${parsed.error.issues.map((i) => `spec.${i.path.join(".")}: ${i.message}`).join("; ")}`,
    );
  return {
    network: parsed.data,
    binding: {
      network: spec.network,
      namespace: pool.metadata.namespace ?? "default",
      labelSelector: selectorString(spec.selector),
      rpcPort: spec.rpcPort ?? 8545,
      ...(spec.wsPort ? { wsPort: spec.wsPort } : {}),
      workload: { kind: spec.workloadRef.kind, name: spec.workloadRef.name },
    },
    ref: {
      network: spec.network,
      namespace: pool.metadata.namespace ?? "default",
      name: pool.metadata.name,
      generation: pool.metadata.generation ?? 0,
    },
  };
}
