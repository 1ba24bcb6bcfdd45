import {
  AppsV1Api,
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  DiscoveryV1Api,
  type V1Pod,
} from "@kubernetes/client-node";
import { afterAll, beforeAll } from "vitest";
import type { LightNode, LightNodePool } from "../../../src/kubernetes/api/crds.js";
import { startRealCluster, type RealCluster } from "./realCluster.js";

/** lightfleet's custom resources in one namespace, as the custom-object calls take them. */
export const lightfleetResources = (namespace: string) => ({
  group: "lightfleet.io",
  version: "v1alpha1",
  namespace,
});

/** The API clients a suite reads and changes a real cluster with, as its admin. */
export interface AdminApis {
  core: CoreV1Api;
  apps: AppsV1Api;
  custom: CustomObjectsApi;
  discovery: DiscoveryV1Api;
  coordination: CoordinationV1Api;
}

/**
 * A real cluster for the tests of one describe block, which releases the chart in `namespace`: started before them
 * (the control plane may be built first, so the hook may take up to 30 minutes cold) and stopped after them. What it
 * returns is for tests and hooks, once the cluster is up.
 */
export function realClusterForSuite(namespace: string, options: Parameters<typeof startRealCluster>[0]) {
  let started: { cluster: RealCluster; apis: AdminApis } | undefined;
  beforeAll(async () => {
    const cluster = await startRealCluster(options);
    const admin = cluster.plane.admin();
    started = {
      cluster,
      apis: {
        core: admin.makeApiClient(CoreV1Api),
        apps: admin.makeApiClient(AppsV1Api),
        custom: admin.makeApiClient(CustomObjectsApi),
        discovery: admin.makeApiClient(DiscoveryV1Api),
        coordination: admin.makeApiClient(CoordinationV1Api),
      },
    };
  }, 30 * 60_000);
  afterAll(async () => {
    await started?.cluster.stop();
  }, 60_000);

  const up = () => {
    if (!started) throw new Error("the real cluster is not up: use it in tests and hooks");
    return started;
  };
  const cluster = () => up().cluster;
  const api = () => up().apis;
  const pods = async (selector: string) =>
    (await api().core.listNamespacedPod({ namespace, labelSelector: selector })).items;
  return {
    cluster,
    api,
    /** The namespace's pods matching a label selector. */
    pods,
    /** The light-node pods of one network. */
    lightPods: (network: string) =>
      pods(`app.kubernetes.io/component=light-node,lightfleet.io/network=${network}`),
    pool: (name: string) =>
      api().custom.getNamespacedCustomObject({
        ...lightfleetResources(namespace),
        plural: "lightnodepools",
        name,
      }) as Promise<LightNodePool>,
    lightNode: (name: string) =>
      api().custom.getNamespacedCustomObject({
        ...lightfleetResources(namespace),
        plural: "lightnodes",
        name,
      }) as Promise<LightNode>,
    /** The last 30 lines the pods wrote, to end a failure message with. */
    podOutputTail: () =>
      `\n--- pod output (last 30 lines)\n${cluster()
        .podLogs.slice(-30)
        .map((line) => line.slice(0, 400))
        .join("\n")}`,
  };
}

/** A pod condition's status ("True", "False", "Unknown"), undefined while the pod has none of that type. */
export const podCondition = (pod: V1Pod, type: string) =>
  pod.status?.conditions?.find((c) => c.type === type)?.status;

/** A devnet network's full nodes, as the chart's `reservedPeers` of that network. */
export const fullNodesAsReservedPeers = (cluster: RealCluster, network: string) =>
  cluster.devnet
    .nodes(network)
    .filter((p) => p.role === "full")
    .map((p) => ({ name: p.name, http: p.httpUrl, ws: p.wsUrl }));

/**
 * Health settings that judge a node within seconds at 1 s blocks: probes every 500 ms, 3 blocks of lag allowed, two
 * probes to change a state. `restartAfter` is each suite's own.
 */
export const QUICK_HEALTH = {
  probeInterval: "500ms",
  maxLagBlocks: 3,
  unhealthyAfter: 2,
  healthyAfter: 2,
  stallAfter: "6s",
  startupGrace: "20s",
  syncingIsUnhealthy: false,
};

/**
 * A light-node workload of two pods for the kubelet stand-in, which runs light-node pods as anvils (the image is never
 * pulled), without persistence and stopped within 2 s.
 */
export const standInWorkload = (ports: { http: number; ws: number }) => ({
  enabled: true,
  replicas: 2,
  image: { repository: "example.org/light-client", tag: "v1" },
  ports,
  persistence: { enabled: false },
  terminationGracePeriodSeconds: 2,
});
