import type { KubeConfig } from "@kubernetes/client-node";
import type { Registry } from "prom-client";
import type { Config } from "../../config/schema.js";
import type { EngineOutput } from "../../health/types.js";
import type { Logger } from "../../log/logger.js";
import type { KubeCacheMetrics } from "../../metrics/kubeCacheMetrics.js";
import { createScalingMetrics } from "../../metrics/scalingMetrics.js";
import { createRateSources, unavailableSource } from "../../scaling/createRateSources.js";
import type { RateSource } from "../../scaling/rateReading.js";
import { listAutoscalers, type Autoscalers } from "./listAutoscalers.js";
import { poolScalingStatus, scalingEvent, type PoolScalingStatus } from "../../scaling/poolScalingStatus.js";
import { Scaler } from "../../scaling/scaler.js";
import { findScalingConflicts } from "../../scaling/scalingConflicts.js";
import { API_VERSION } from "../api/crds.js";
import { EndpointSliceSource } from "../endpointSlices/endpointSliceSource.js";
import type { EventRecorder } from "../status/eventRecorder.js";
import type { KubernetesFleet } from "../pods/kubernetesFleet.js";
import { POOL_KEY_LABELS } from "../controller/poolKey.js";
import type { PoolNetwork } from "../controller/poolNetworks.js";
import { gatewayCountersProblem } from "./gatewayCounters.js";
import type { PoolRef } from "../status/statusWriter.js";

/** HPAs and ScaledObjects are listed at most this often per namespace (not on every 2 s round). */
const AUTOSCALER_LIST_TTL_MS = 30_000;

export interface ClusterScaling {
  setPools(pools: readonly PoolNetwork[]): void;
  /**
   * Starts a scaling round of a pool after its health round (leader only: the controller calls it only then), beside
   * the health rounds, which do not wait for it; skipped while the pool's previous one is under way.
   */
  round(pool: PoolRef, output: EngineOutput): void;
  /** The pool-status fields of the last round, for the StatusWriter. */
  status(key: string): PoolScalingStatus | undefined;
  /** Drops numbers and memory when this replica stops leading, so only the leader exports them. */
  forget(): void;
  /** Schedules the cron floors; returns the function that stops them. */
  start(onFloorChange: () => void): () => void;
  stop(): Promise<void>;
}

/**
 * The autoscaler in a cluster: sizes each LightNodePool's workload through its scale subresource, reads the rate from
 * the gateway pods (their Service's EndpointSlices) or Prometheus, leaves a workload alone while an HPA or a KEDA
 * ScaledObject targets it, and reports each decision in the pool status and as Events. The autoscaler names pools by
 * their key (namespace/network); its rate sources read by network name (and namespace, in a PromQL template).
 */
export function clusterScaling(deps: {
  config: Config;
  kubeConfig: KubeConfig;
  fleet: KubernetesFleet;
  registry: Registry;
  logger: Logger;
  clock: () => number;
  events: EventRecorder;
  cacheMetrics?: KubeCacheMetrics;
}): ClusterScaling {
  const { config, kubeConfig, fleet, logger, clock, events } = deps;
  const gatewayService = config.controller.gatewayService;
  const gatewayNamespace =
    gatewayService?.namespace ?? process.env.POD_NAMESPACE ?? (config.controller.namespace || "default");
  const gateways = gatewayService
    ? new EndpointSliceSource({
        kubeConfig,
        services: [
          {
            network: "gateway",
            namespace: gatewayNamespace,
            service: gatewayService.name,
            httpPortName: gatewayService.port,
          },
        ],
        logger: logger.child({ component: "gateway-discovery" }),
        ...(deps.cacheMetrics ? { cacheMetrics: deps.cacheMetrics } : {}),
      })
    : undefined;
  let pools = new Map<string, PoolNetwork>();
  const autoscalers = new Map<string, { at: number; list: Promise<Autoscalers> }>();
  const listed = (namespace: string): Promise<Autoscalers> => {
    const cached = autoscalers.get(namespace);
    if (cached && clock() - cached.at < AUTOSCALER_LIST_TTL_MS) return cached.list;
    const list = listAutoscalers(kubeConfig, namespace);
    autoscalers.set(namespace, { at: clock(), list });
    // A failed list is not kept: the next round asks again.
    list.catch(() => autoscalers.delete(namespace));
    return list;
  };
  const rateSources = createRateSources({
    clock,
    ...(gateways
      ? { discoverGateways: () => gateways.upstreams("gateway").map((u) => `${u.httpUrl}/metrics`) }
      : {}),
  });
  /** A pool's rate source: read by its network name and namespace, not by the key the autoscaler knows it by. */
  const sourceOf = (key: string, scaling: PoolNetwork["network"]["scaling"]): RateSource => {
    const pool = pools.get(key);
    if (!pool) return unavailableSource("none", `no pool ${key}`);
    const { network, namespace } = pool.ref;
    const problem =
      scaling.source.type === "gateway"
        ? gatewayCountersProblem(
            pool.ref,
            [...pools.values()].map((p) => p.ref),
            gatewayNamespace,
          )
        : undefined;
    if (problem) return unavailableSource("gateway", problem);
    const source = rateSources({ name: network, namespace, scaling });
    return { kind: source.kind, read: () => source.read(network) };
  };
  const scaler = new Scaler({
    networks: [],
    fleet,
    currentReplicas: (key) => fleet.replicas(key),
    source: ({ name, scaling }) => sourceOf(name, scaling),
    conflicts: async (key) => {
      const pool = pools.get(key);
      if (!pool) return [];
      return findScalingConflicts(pool.binding.workload, await listed(pool.ref.namespace));
    },
    clock,
    logger: logger.child({ component: "autoscaler" }),
    metrics: createScalingMetrics(deps.registry, POOL_KEY_LABELS),
    // A new leader keeps to the scale-down window: the recommendations the last leader wrote in the pool's status,
    // else the size running now as if just recommended (so it never shrinks a pool before a whole window has passed).
    initialMemory: (key, current, now) =>
      pools.get(key)?.ref.scalingMemory ?? { recommendations: [{ at: now, replicas: current }] },
  });
  const failures = new Map<string, string>();
  // Comes back every round (a missing workload, an API outage): logged when it changes, not every round.
  const failed = (key: string, error: unknown) => {
    const message = String(error);
    if (failures.get(key) !== message)
      logger.error({ pool: key, err: message }, "autoscaler round failed; retried every round");
    failures.set(key, message);
  };
  return {
    setPools(next) {
      pools = new Map(next.map((p) => [p.key, p]));
      scaler.setNetworks(next.map((p) => ({ name: p.key, scaling: p.network.scaling })));
    },
    round(pool, output) {
      const previous = scaler.status(pool.key);
      const round = scaler.roundBeside(pool.key, output, (error) => failed(pool.key, error));
      void round?.then(async (current) => {
        if (!current) return;
        failures.delete(pool.key);
        const event = scalingEvent(previous, current);
        if (event)
          await events.record({
            target: {
              kind: "LightNodePool",
              apiVersion: API_VERSION,
              namespace: pool.namespace,
              name: pool.name,
              ...(pool.uid ? { uid: pool.uid } : {}),
            },
            type: event.type,
            reason: event.reason,
            action: "Scale",
            note: event.note.slice(0, 1024),
          });
      });
    },
    status(key) {
      const status = scaler.status(key);
      return status ? poolScalingStatus(status) : undefined;
    },
    forget: () => scaler.forget(),
    start: (onFloorChange) => scaler.scheduleCronFloors(onFloorChange),
    async stop() {
      await scaler.settled();
      await gateways?.close();
    },
  };
}
