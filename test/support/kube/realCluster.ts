import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { V1Pod } from "@kubernetes/client-node";
import { stringify } from "yaml";
import type { Devnet, DevnetNetworkOptions } from "../../../src/devnet/devnet.js";
import { startTestDevnet } from "../devnet.js";
import { CHART_DIR, helm, kubectl, type HelmResult } from "../helm.js";
import { ensureControlPlane, missingGo } from "./controlPlaneBinaries.js";
import { startControlPlane, type ControlPlane } from "./controlPlane.js";
import { startKubeletStandIn, type KubeletStandIn } from "./kubeletStandIn.js";
import { createPodNetwork, podNetworkUnavailable, type PodNetwork } from "./podNetwork.js";
import { anvilPodRuntime, lightfleetPodRuntime, nodeScriptPodRuntime } from "./podRuntimes.js";
import { startServiceProxy } from "./serviceProxy.js";

/** The image the chart is installed with in these tests; its pods run from the source tree. */
export const LIGHTFLEET_IMAGE = "ghcr.io/lightfleet/lightfleet";
export const NODE_NAME = "stand-in-node";

export interface RealCluster {
  plane: ControlPlane;
  podNetwork: PodNetwork;
  devnet: Devnet;
  kubelet: KubeletStandIn;
  /** Output of the pods run here (controller, gateway), newest last, for failure messages. */
  podLogs: string[];
  helm(args: string[], timeoutMs?: number): Promise<HelmResult>;
  kubectl(args: string[], timeoutMs?: number, input?: string): Promise<HelmResult>;
  /** Installs the chart as RELEASE in NAMESPACE with VALUES (written to a file, as a user would pass -f). */
  install(release: string, namespace: string, values: unknown): Promise<HelmResult>;
  /** `helm upgrade` of RELEASE with the values it was installed with (`--reuse-values`), and FLAGS. */
  upgrade(release: string, namespace: string, flags?: string[]): Promise<HelmResult>;
  stop(): Promise<void>;
}

/**
 * Why the real control plane cannot run here, or undefined. In CI a missing prerequisite is an error, so CI never
 * passes by skipping; locally the caller skips with this message.
 */
export async function realClusterUnavailable(): Promise<string | undefined> {
  const reason = (await missingGo()) ?? (await podNetworkUnavailable());
  if (reason && process.env.CI) throw new Error(reason);
  return reason;
}

/**
 * A real control plane (etcd, kube-apiserver, kube-controller-manager), a pod network, a devnet whose networks the
 * light-node pods follow, and a kubelet stand-in that runs light-node pods as anvils and lightfleet's own pods as
 * processes of the source tree.
 */
export async function startRealCluster(options: {
  networks: DevnetNetworkOptions[];
  blockTimeMs: number;
  log?: (line: string) => void;
}): Promise<RealCluster> {
  const binaries = await ensureControlPlane(options.log);
  const podNetwork = await createPodNetwork();
  const cleanup: Array<() => Promise<unknown>> = [() => podNetwork.destroy()];
  const stop = async () => {
    for (const fn of cleanup.splice(0).reverse()) await fn().catch(() => undefined);
  };
  try {
    const plane = await startControlPlane(binaries, { serviceCidr: podNetwork.serviceCidr });
    cleanup.push(() => plane.stop());
    const devnet = await startTestDevnet({ networks: options.networks, blockTimeMs: options.blockTimeMs });
    cleanup.push(() => devnet.stop());
    const chainIds = new Map(options.networks.map((n) => [n.name, n.chainId]));
    const podLogs: string[] = [];
    const keepLog = (line: string) => {
      podLogs.push(line);
      if (podLogs.length > 2000) podLogs.splice(0, podLogs.length - 2000);
      options.log?.(line);
    };
    const anvils = anvilPodRuntime(devnet, podNetwork, chainIds);
    const lightfleet = lightfleetPodRuntime(plane, { log: keepLog });
    const serviceProxy = startServiceProxy({
      kubeConfig: plane.admin(),
      addAddress: (address) => podNetwork.addHostAddress(address),
      log: keepLog,
    });
    cleanup.push(() => serviceProxy.stop());
    const scripts = nodeScriptPodRuntime(plane, serviceProxy, { log: keepLog });
    const isLightNode = (pod: V1Pod) =>
      (pod.spec?.readinessGates ?? []).some((g) => g.conditionType === "lightfleet.io/in-sync");
    const runtimeFor = (pod: V1Pod) => {
      if (isLightNode(pod)) return anvils;
      const container = pod.spec?.containers[0];
      const image = container?.image ?? "";
      if (!image.startsWith(`${LIGHTFLEET_IMAGE}:`) && !image.startsWith(`${LIGHTFLEET_IMAGE}@`))
        return undefined;
      // The image's node running a script (the helm test pods), or the lightfleet CLI.
      return container?.command?.[0] === "node" ? scripts : lightfleet;
    };
    const kubelet = await startKubeletStandIn({
      kubeConfig: plane.admin(),
      nodeName: NODE_NAME,
      nodeIp: podNetwork.hostIp,
      allocateIp: (pod) => (isLightNode(pod) ? podNetwork.allocate() : podNetwork.allocateOnHost()),
      releaseIp: (ip) => podNetwork.release(ip),
      runtimeFor,
      log: keepLog,
    });
    cleanup.push(() => kubelet.stop());
    const kubeconfig = plane.adminKubeconfigFile;
    return {
      plane,
      podNetwork,
      devnet,
      kubelet,
      podLogs,
      helm: (args, timeoutMs) => helm(args, { kubeconfig, timeoutMs }),
      kubectl: (args, timeoutMs, input) => kubectl(args, { kubeconfig, timeoutMs, input }),
      async install(release, namespace, values) {
        const file = join(plane.dir, `${release}-values.yaml`);
        await writeFile(file, stringify(values));
        return helm(
          ["install", release, CHART_DIR, "--namespace", namespace, "--create-namespace", "--values", file],
          { kubeconfig, timeoutMs: 120_000 },
        );
      },
      upgrade(release, namespace, flags = []) {
        return helm(["upgrade", release, CHART_DIR, "--namespace", namespace, "--reuse-values", ...flags], {
          kubeconfig,
          timeoutMs: 120_000,
        });
      },
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
