import { CoreV1Api, type KubeConfig } from "@kubernetes/client-node";
import type { Devnet } from "../../../src/devnet/devnet.js";

/**
 * Keeps the devnet's block driver on the light nodes a real kubelet runs: each running container of a light-node pod
 * of NAMESPACE (an anvil started with the devnet's chain id, genesis timestamp and `--no-mining`) is attached to the
 * devnet network of its `lightfleet.io/network` label at its pod IP, so every block is mirrored onto it as onto the
 * devnet's own light nodes. A new container (a recreated pod, a restart) is a new node at genesis: attached anew.
 * Polls every 250 ms until stopped; a container not listening yet is tried again on the next round.
 */
export function startLightNodeAttacher(options: {
  kubeConfig: KubeConfig;
  namespace: string;
  devnet: Devnet;
  port: number;
}): { stop(): void } {
  const core = options.kubeConfig.makeApiClient(CoreV1Api);
  /** The container each pod name is attached as. */
  const attached = new Map<string, string>();
  let stopped = false;
  const detach = (name: string) => {
    attached.delete(name);
    try {
      options.devnet.detach(name);
    } catch {
      // not attached
    }
  };
  const round = async () => {
    const pods = await core.listNamespacedPod({
      namespace: options.namespace,
      labelSelector: "app.kubernetes.io/component=light-node,lightfleet.io/network",
    });
    for (const pod of pods.items) {
      const name = pod.metadata!.name!;
      const status = pod.status?.containerStatuses?.[0];
      const container = status?.state?.running ? status.containerID : undefined;
      if (!container || !pod.status?.podIP || pod.metadata?.deletionTimestamp) continue;
      if (attached.get(name) === container) continue;
      detach(name);
      await options.devnet
        .attach({
          name,
          network: pod.metadata!.labels!["lightfleet.io/network"]!,
          httpUrl: `http://${pod.status.podIP}:${options.port}`,
        })
        .then(() => attached.set(name, container))
        .catch(() => undefined); // not listening yet
    }
  };
  const loop = async () => {
    while (!stopped) {
      await round().catch(() => undefined);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  };
  void loop();
  return {
    stop: () => {
      stopped = true;
      for (const name of [...attached.keys()]) detach(name);
    },
  };
}
