import {
  ApiException,
  CoreV1Api,
  KubeConfig,
  PatchStrategy,
  setHeaderOptions,
} from "@kubernetes/client-node";
import { makeApiClient } from "../kubernetes/api/kubeClients.js";
import { IN_SYNC_CONDITION, RESTART_ANNOTATION } from "../kubernetes/api/crds.js";

/** A restart request that could not be made; `usage` when the fault is in what was asked (exit 2), else 1. */
export class NodeRestartError extends Error {
  override name = "NodeRestartError";
  constructor(
    message: string,
    readonly usage: boolean,
  ) {
    super(message);
  }
}

/**
 * In `up`: asks the controller to restart NODE (`POST /nodes/NODE/restart` on the admin port). Resolves with the
 * node's network.
 */
export async function requestRestartInUp(adminUrl: string, node: string): Promise<string> {
  const url = new URL(`/nodes/${encodeURIComponent(node)}/restart`, adminUrl).toString();
  let res: Response;
  try {
    res = await fetch(url, { method: "POST", signal: AbortSignal.timeout(30_000) });
  } catch (error) {
    const cause = (error as { cause?: { code?: string } }).cause?.code ?? (error as Error).message;
    throw new NodeRestartError(
      `cannot reach the admin endpoint ${adminUrl} (${cause}): is \`lightfleet up\` running there? Point at it ` +
        "with --admin URL, or use --cluster for a node in Kubernetes",
      false,
    );
  }
  const body = (await res.json().catch(() => undefined)) as { network?: string; error?: string } | undefined;
  if (res.status === 202 && typeof body?.network === "string") return body.network;
  if (res.status === 404 && typeof body?.error === "string") throw new NodeRestartError(body.error, true);
  throw new NodeRestartError(
    `${url} answered HTTP ${res.status}${body?.error ? `: ${body.error}` : ""}: is it the admin port of \`lightfleet up\`?`,
    false,
  );
}

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
