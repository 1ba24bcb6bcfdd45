import { CoreV1Api, type KubeConfig, type V1Pod } from "@kubernetes/client-node";
import { ListWatch } from "../../../src/kubernetes/api/listWatch.js";
import { silentLogger } from "../../../src/log/logger.js";

/** A container the kubelet ran for a pod, as the pod's status named it. */
export interface ContainerRun {
  pod: string;
  component: string;
  container: string;
  image: string;
  /** `containerd://ID`: the runtime's own container. */
  containerId: string;
}

/**
 * Every container a kubelet ran for the pods of NAMESPACE, from the pods' statuses (list + watch from start to
 * stop, so a short-lived pod such as helm test's hook, or an evicted one, is counted too). For the tier's report:
 * which pods ran as real containers.
 */
export class ContainerLedger {
  private readonly runs = new Map<string, ContainerRun>();
  private readonly pods: ListWatch<V1Pod>;

  constructor(kubeConfig: KubeConfig, namespace: string) {
    const api = kubeConfig.makeApiClient(CoreV1Api);
    this.pods = new ListWatch<V1Pod>({
      kubeConfig,
      path: `/api/v1/namespaces/${namespace}/pods`,
      list: () => api.listNamespacedPod({ namespace }),
      what: "pod",
      logger: silentLogger(),
      onChange: () => {
        for (const pod of this.pods.list()) this.record(pod);
      },
    });
    this.pods.start();
  }

  private record(pod: V1Pod): void {
    const statuses = [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])];
    for (const status of statuses) {
      if (!status.containerID || this.runs.has(status.containerID)) continue;
      this.runs.set(status.containerID, {
        pod: pod.metadata?.name ?? "",
        component: pod.metadata?.labels?.["app.kubernetes.io/component"] ?? "",
        container: status.name,
        image: status.image,
        containerId: status.containerID,
      });
    }
  }

  /** Each container seen, in the order first seen. */
  list(): ContainerRun[] {
    return [...this.runs.values()];
  }

  /** One line per container: pod, component, container, image and the runtime's id (shortened). */
  report(): string {
    const rows = this.list().map((r) =>
      [
        r.pod,
        r.component || "-",
        r.container,
        r.image,
        r.containerId.replace(/^(\w+:\/\/\w{12})\w*$/, "$1"),
      ].join("  "),
    );
    return `${rows.length} container(s) ran through the real kubelet (containerd, runc):\n${rows.map((r) => `  ${r}`).join("\n")}`;
  }

  stop(): void {
    this.pods.stop();
  }
}
