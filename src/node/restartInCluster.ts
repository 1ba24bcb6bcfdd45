import {
  ApiException,
  CoreV1Api,
  KubeConfig,
  PatchStrategy,
  setHeaderOptions,
} from "@kubernetes/client-node";
import { makeApiClient } from "../kubernetes/api/kubeClients.js";
import { IN_SYNC_CONDITION, RESTART_ANNOTATION } from "../kubernetes/api/crds.js";
import { NodeRestartError } from "./nodeRestartError.js";

/**
 * In Kubernetes: annotates the light node's pod with RESTART_ANNOTATION (the time asked), which the leading controller
 * honours on its next round by evicting the pod. Uses the current kubeconfig context; resolves with the namespace.
 */
export async function requestRestartInCluster(node: string, namespace: string | undefined): Promise<string> {
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromDefault();
  const ns = namespace ?? kubeConfig.getContextObject(kubeConfig.getCurrentContext())?.namespace ?? "default";
  const core = makeApiClient(kubeConfig, CoreV1Api);
  try {
    const pod = await core.readNamespacedPod({ name: node, namespace: ns });
    if (!(pod.spec?.readinessGates ?? []).some((g) => g.conditionType === IN_SYNC_CONDITION))
      throw new NodeRestartError(
        `pod ${ns}/${node} is not a lightfleet light node (it has no ${IN_SYNC_CONDITION} readiness gate)`,
        true,
      );
    await core.patchNamespacedPod(
      {
        name: node,
        namespace: ns,
        body: { metadata: { annotations: { [RESTART_ANNOTATION]: new Date().toISOString() } } },
      },
      setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
    );
  } catch (error) {
    if (error instanceof ApiException && error.code === 404)
      throw new NodeRestartError(`no pod named ${node} in namespace ${ns}`, true);
    if (error instanceof ApiException)
      throw new NodeRestartError(
        `the API server refused (HTTP ${error.code}) to annotate pod ${ns}/${node}`,
        false,
      );
    throw error;
  }
  return ns;
}
