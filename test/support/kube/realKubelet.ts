import { execFile, spawn } from "node:child_process";
import { mkdir, writeFile } from "node:fs/promises";
import { createServer, connect, type Socket } from "node:net";
import { join } from "node:path";
import { promisify } from "node:util";
import { CoreV1Api, type KubeConfig } from "@kubernetes/client-node";
import { stringify } from "yaml";
import { freePort } from "../../../src/process/freePort.js";
import { waitFor } from "../waitFor.js";

const run = promisify(execFile);

export interface RealKubelet {
  nodeName: string;
  /** Recent output, for failure messages. */
  logs(): string;
  stop(): Promise<void>;
}

/**
 * The kubelet built from the pinned k8s.io/kubernetes, joined to a real kube-apiserver (KUBECONFIGFILE, the
 * admin's credentials: no TLS bootstrap) as node NODENAME, running pods through containerd at ENDPOINT. Set for a
 * shared test machine:
 * - everything it keeps under DIR (root, certificates, pod logs), its API on an ephemeral port of 127.0.0.1, no
 *   healthz or read-only port;
 * - cgroupfs with no QoS cgroups and no node-allocatable enforcement (the machine's cgroups are not its own), no
 *   eviction and no image garbage collection (a full disk from other work must not evict the pods under test);
 * - swap allowed, no iptables chains of its own (nothing here needs them).
 * Status updates every 2 s so probe results reach the API quickly.
 */
export async function startRealKubelet(options: {
  binary: string;
  kubeConfig: KubeConfig;
  kubeconfigFile: string;
  endpoint: string;
  nodeName: string;
  nodeIp: string;
  dir: string;
  /** The cluster DNS server's address, written into each pod's resolv.conf with the cluster's search domains. */
  clusterDns?: string;
}): Promise<RealKubelet> {
  const { dir, nodeName } = options;
  await mkdir(join(dir, "pod-logs"), { recursive: true });
  const config = {
    apiVersion: "kubelet.config.k8s.io/v1beta1",
    kind: "KubeletConfiguration",
    cgroupDriver: "cgroupfs",
    cgroupsPerQOS: false,
    enforceNodeAllocatable: [],
    failSwapOn: false,
    containerRuntimeEndpoint: options.endpoint,
    address: "127.0.0.1",
    port: await freePort(),
    readOnlyPort: 0,
    healthzPort: 0,
    podLogsDir: join(dir, "pod-logs"),
    authentication: { anonymous: { enabled: false }, webhook: { enabled: false } },
    authorization: { mode: "AlwaysAllow" },
    evictionHard: {},
    imageGCHighThresholdPercent: 100,
    imageGCLowThresholdPercent: 99,
    serializeImagePulls: false,
    resolvConf: "",
    ...(options.clusterDns ? { clusterDNS: [options.clusterDns], clusterDomain: "cluster.local" } : {}),
    syncFrequency: "5s",
    fileCheckFrequency: "5s",
    nodeStatusUpdateFrequency: "2s",
    localStorageCapacityIsolation: false,
    makeIPTablesUtilChains: false,
  };
  const configFile = join(dir, "kubelet.yaml");
  await writeFile(configFile, stringify(config));
  const output: string[] = [];
  const child = spawn(
    options.binary,
    [
      `--config=${configFile}`,
      `--kubeconfig=${options.kubeconfigFile}`,
      `--root-dir=${join(dir, "root")}`,
      `--cert-dir=${join(dir, "pki")}`,
      `--hostname-override=${nodeName}`,
      `--node-ip=${options.nodeIp}`,
      "--v=1",
    ],
    { stdio: ["ignore", "pipe", "pipe"], detached: true },
  );
  const keep = (chunk: Buffer) => {
    output.push(chunk.toString());
    if (output.length > 400) output.splice(0, output.length - 400);
  };
  child.stdout.on("data", keep);
  child.stderr.on("data", keep);
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const logs = () => output.join("").slice(-6000);
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    process.kill(-child.pid!, "SIGTERM");
    const timer = setTimeout(() => process.kill(-child.pid!, "SIGKILL"), 10_000);
    await exited;
    clearTimeout(timer);
  };
  const core = options.kubeConfig.makeApiClient(CoreV1Api);
  try {
    await waitFor(
      async () => {
        if (child.exitCode !== null) throw new Error(`the kubelet exited ${child.exitCode}`);
        const node = await core.readNode({ name: nodeName });
        return node.status?.conditions?.find((c) => c.type === "Ready")?.status === "True";
      },
      { timeoutMs: 120_000, intervalMs: 250, what: () => `node ${nodeName} Ready:\n${logs()}` },
    );
  } catch (error) {
    await stop();
    throw error;
  }
  return { nodeName, logs, stop };
}

/**
 * The stand-in for kube-scheduler (not built): binds each pod of NAMESPACE that has no node yet to NODENAME, as the
 * scheduler would with one node, polling every 250 ms until stopped.
 */
export function startBinder(kubeConfig: KubeConfig, namespace: string, nodeName: string): { stop(): void } {
  const core = kubeConfig.makeApiClient(CoreV1Api);
  let stopped = false;
  const bindPending = async () => {
    const pods = await core.listNamespacedPod({ namespace, fieldSelector: "spec.nodeName=" });
    for (const pod of pods.items) {
      if (pod.metadata?.deletionTimestamp) continue;
      await core
        .createNamespacedPodBinding({
          name: pod.metadata!.name!,
          namespace,
          body: {
            metadata: { name: pod.metadata!.name!, namespace },
            target: { apiVersion: "v1", kind: "Node", name: nodeName },
          },
        })
        .catch(() => undefined); // bound meanwhile
    }
  };
  const loop = async () => {
    while (!stopped) {
      await bindPending().catch(() => undefined);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  };
  void loop();
  return {
    stop: () => {
      stopped = true;
    },
  };
}

/**
 * The `kubernetes` Service for pods, in place of kube-proxy: SERVICEIP (the first address of the service range, the
 * ClusterIP the API server gives that Service and puts in its own serving certificate) is added to the host's side
 * of the pod network (DEVICE), and TCP port 443 there is relayed to the API server on 127.0.0.1. Pods then reach
 * the API with the in-cluster configuration the kubelet gives them, TLS verified end to end.
 */
export async function startApiServiceRelay(options: {
  server: string;
  serviceIp: string;
  device: string;
}): Promise<{ stop(): Promise<void> }> {
  const target = new URL(options.server);
  await run("ip", ["addr", "add", `${options.serviceIp}/32`, "dev", options.device], { timeout: 10_000 });
  try {
    const relay = await startTcpRelay({
      listen: { host: options.serviceIp, port: 443 },
      target: { host: target.hostname, port: Number(target.port) },
    });
    return {
      async stop() {
        await relay.stop();
        await run("ip", ["addr", "del", `${options.serviceIp}/32`, "dev", options.device], {
          timeout: 10_000,
        }).catch(() => undefined);
      },
    };
  } catch (error) {
    await run("ip", ["addr", "del", `${options.serviceIp}/32`, "dev", options.device]).catch(() => undefined);
    throw error;
  }
}

/**
 * Relays TCP connections to LISTEN (port 0: an ephemeral one) on to TARGET: how pods on the bridge reach a server
 * of this host that listens on loopback only (the devnet's full nodes).
 */
export async function startTcpRelay(options: {
  listen: { host: string; port: number };
  target: { host: string; port: number };
}): Promise<{ port: number; stop(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect(options.target.port, options.target.host);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.once("close", () => sockets.delete(socket));
      socket.on("error", () => {
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.listen.port, options.listen.host, () => resolve());
  });
  return {
    port: (server.address() as { port: number }).port,
    async stop() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
