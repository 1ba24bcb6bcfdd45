import { parseConfig } from "../../src/config/loadConfig.js";
import { startClusterController } from "../../src/kubernetes/controller/clusterController.js";
import { createLogger, silentLogger } from "../../src/log/logger.js";
import type { Registry } from "prom-client";
import { createRegistry } from "../../src/metrics/registry.js";
import { podNodeObject, startPodNodes, startTestDevnet } from "./devnet.js";
import { startFakeApiServer, type FakeApiServer } from "./fakeApiServer.js";

/** Where the fake API server keeps the objects the controller reads and writes. */
export const PODS = "api/v1/pods";
export const POOLS = "apis/lightfleet.io/v1alpha1/lightnodepools";
export const NODES = "apis/lightfleet.io/v1alpha1/lightnodes";
export const EVENTS = "apis/events.k8s.io/v1/events";
export const SLICES = "apis/discovery.k8s.io/v1/endpointslices";

/** What a test stops when it ends, last started first (the caller's afterEach runs it). */
export type Cleanup = Array<() => unknown>;

/**
 * A devnet network "devnet" (two full nodes, a block every 300 ms) with `lights` light anvils on 127.0.0.2, .3, ...
 * (one port: pod IPs), and a fake API server holding their pods light-0, light-1, ... in namespace eth.
 */
export async function devnetPodsOnFakeApi(lights: number, cleanup: Cleanup) {
  const devnet = await startTestDevnet({ networks: [{ name: "devnet", chainId: 31_337, fullNodes: 2 }] });
  cleanup.push(() => devnet.stop());
  const { port } = await startPodNodes(devnet, lights);
  const miner = setInterval(() => void devnet.mine("devnet").catch(() => {}), 300);
  cleanup.push(() => clearInterval(miner));
  const api = await startFakeApiServer();
  cleanup.push(() => api.close());
  for (let i = 0; i < lights; i++) api.put(PODS, podNodeObject(i));
  return { devnet, api, port };
}

/**
 * The cluster controller against the fake API server: namespace eth unless `config` says otherwise, a 3 s Lease so a
 * successor takes over within a test. Stopped when the test ends, or earlier by `stop` (once either way).
 * DEBUG_K8S=1 logs its decisions.
 */
export function startControllerOnFakeApi(
  api: FakeApiServer,
  cleanup: Cleanup,
  options: { config?: Record<string, unknown>; registry?: Registry; identity?: string } = {},
) {
  const running = startClusterController({
    config: parseConfig({ controller: { namespace: "eth", ...options.config } }, "test", {}),
    kubeConfig: api.kubeConfig(),
    registry: options.registry ?? createRegistry({ defaultMetrics: false }),
    logger: process.env.DEBUG_K8S ? createLogger({ format: "json", level: "debug" }) : silentLogger(),
    identity: options.identity ?? "controller-0",
    leaseNamespace: "eth",
    lease: { leaseDurationMs: 3_000, renewDeadlineMs: 2_000, retryPeriodMs: 200 },
  });
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await running.stop();
  };
  cleanup.push(stop);
  return { running, stop };
}

/** A pod's lightfleet.io/in-sync readiness gate as the controller last wrote it; undefined before any write. */
export const podInSync = (api: FakeApiServer, pod: string, namespace = "eth") =>
  (
    api.get(PODS, namespace, pod)?.status as
      { conditions?: Array<{ type: string; status: string }> } | undefined
  )?.conditions?.find((c) => c.type === "lightfleet.io/in-sync")?.status;
