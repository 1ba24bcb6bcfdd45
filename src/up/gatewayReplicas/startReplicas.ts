import type { Config } from "../../config/schema.js";
import { sharedStateSchema } from "../../config/sections/gateway.js";
import type { UpstreamSource } from "../../gateway/upstreams/upstreamSource.js";
import type { RunningComponent, UpContext } from "../component.js";
import { gatewayEndpoints } from "../gatewayEndpoints.js";
import { startLocalRedis } from "./redisServer.js";
import type { LocalRedis } from "./redisServer.js";
import { startReplicaFront } from "./replicaFront.js";
import type { ReplicaFront } from "./replicaFront.js";
import { ReplicaSet } from "./replicaSet.js";

/**
 * `gateway.replicas` above 1 in `up`: the shared Redis (the configured one, or a redis-server started here), that many
 * gateway processes on loopback ports, and the front on the gateway's own address spreading calls over them.
 */
export async function startGatewayReplicas(
  context: UpContext,
  config: Config,
  source: UpstreamSource,
): Promise<RunningComponent> {
  const { logger, flags } = context;
  const settings = config.gateway;
  let redis: LocalRedis | undefined;
  let set: ReplicaSet | undefined;
  let front: ReplicaFront | undefined;
  const stop = async () => {
    await front?.close();
    await set?.stop();
    await redis?.stop();
  };
  try {
    let shared = settings.sharedState;
    if (shared.backend === "memory") {
      redis = await startLocalRedis(config.dataDir, logger);
      shared = sharedStateSchema.parse({ backend: "redis", url: redis.url });
    }
    set = new ReplicaSet({
      count: settings.replicas,
      // Each replica is one process (no workers of its own); only the front reaches it, and it says who the client is.
      config: {
        ...config,
        gateway: { ...settings, sharedState: shared, workers: 1, trustForwardedFor: true },
      },
      source,
      logger,
    });
    await set.start();
    const replicas = set;
    front = await startReplicaFront({
      host: settings.host,
      port: flags.port ?? settings.port,
      targets: () =>
        replicas.list().flatMap((r) => (r.serving && r.url ? [{ name: r.name, url: r.url }] : [])),
      logger,
    });
  } catch (error) {
    await stop();
    throw error;
  }
  const replicas = set;
  context.gateway = replicas;
  const networks = config.networks.map((n) => n.name);
  return {
    endpoints: [
      ...gatewayEndpoints(config, front.url),
      ...replicas.list().map((r) => ({
        label: r.name,
        url: r.url ?? "",
        note: `gateway replica, pid ${r.pid}`,
      })),
      ...(redis ? [{ label: "redis", url: redis.url, note: "the replicas' shared state" }] : []),
    ],
    // Ready once some replica serves and every network has a head in one of them.
    ready: () => {
      const serving = replicas.list().filter((r) => r.serving);
      if (serving.length === 0) return { ok: false, message: "no gateway replica serving" };
      const missing = networks.filter((n) => !serving.some((r) => r.heads[n] != null));
      return missing.length === 0
        ? { ok: true }
        : { ok: false, message: `no head yet for ${missing.join(", ")}` };
    },
    stop,
  };
}
