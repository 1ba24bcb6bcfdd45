/**
 * bench:controller's real-API-server run: the chart's CRDs, a namespace with its service account, one LightNodePool
 * per pool and every pod created and given a running status, as kubelets would have left them.
 */
import { readdirSync, readFileSync } from "node:fs";
import { request, type RequestOptions } from "node:https";
import { join } from "node:path";
import {
  ApiextensionsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  PatchStrategy,
  setHeaderOptions,
  type KubeConfig,
  type V1CustomResourceDefinition,
  type V1Pod,
} from "@kubernetes/client-node";
import { parse } from "yaml";
import { makeApiClient } from "../src/kubernetes/api/kubeClients.js";

const NAMESPACE = "bench";

export async function prepareBenchCluster(
  kubeConfig: KubeConfig,
  options: {
    pools: number;
    podsPerPool: number;
    pod: (
      pool: number,
      i: number,
    ) => { metadata: { name: string; labels?: Record<string, string> }; spec: object; status: object };
  },
): Promise<void> {
  const extensions = makeApiClient(kubeConfig, ApiextensionsV1Api);
  const core = makeApiClient(kubeConfig, CoreV1Api);
  const custom = makeApiClient(kubeConfig, CustomObjectsApi);
  const crdDir = join(process.cwd(), "charts/lightfleet/crds");
  for (const file of readdirSync(crdDir).filter((f) => f.endsWith(".yaml"))) {
    const crd = parse(readFileSync(join(crdDir, file), "utf8")) as V1CustomResourceDefinition;
    // As JSON, not through client-node's typed serializer, which drops the x-kubernetes-* schema extensions.
    await postJson(kubeConfig, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd);
    await until(`CRD ${crd.metadata!.name} established`, async () => {
      const got = await extensions.readCustomResourceDefinition({ name: crd.metadata!.name! });
      return got.status?.conditions?.some((c) => c.type === "Established" && c.status === "True") ?? false;
    });
  }
  await core.createNamespace({ body: { metadata: { name: NAMESPACE } } });
  await until("the bench namespace's default service account", () =>
    core.readNamespacedServiceAccount({ name: "default", namespace: NAMESPACE }).then(() => true),
  );
  for (let p = 0; p < options.pools; p++) {
    await custom.createNamespacedCustomObject({
      group: "lightfleet.io",
      version: "v1alpha1",
      namespace: NAMESPACE,
      plural: "lightnodepools",
      body: {
        apiVersion: "lightfleet.io/v1alpha1",
        kind: "LightNodePool",
        metadata: { name: `net-${p}` },
        spec: {
          network: `net-${p}`,
          chainId: 1,
          workloadRef: { kind: "StatefulSet", name: `light-${p}` },
          selector: { matchLabels: { app: "light", network: `net-${p}` } },
          reservedPeers: [{ name: "full-0", http: "http://full-0.bench.svc:8545" }],
        },
      },
    });
  }
  const jobs: Array<() => Promise<void>> = [];
  for (let p = 0; p < options.pools; p++) {
    for (let i = 0; i < options.podsPerPool; i++) {
      jobs.push(async () => {
        const { metadata, spec, status } = options.pod(p, i);
        const meta = { name: metadata.name, labels: metadata.labels ?? {} };
        await core.createNamespacedPod({ namespace: NAMESPACE, body: { metadata: meta, spec } as V1Pod });
        await core.patchNamespacedPodStatus(
          { name: meta.name, namespace: NAMESPACE, body: { status } },
          setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
        );
      });
    }
  }
  // 32 at a time: quick, without making the API server's priority and fairness queue them.
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      for (let job = jobs.shift(); job; job = jobs.shift()) await job();
    }),
  );
}

async function postJson(kubeConfig: KubeConfig, path: string, body: unknown): Promise<void> {
  const options: RequestOptions = { method: "POST", headers: { "content-type": "application/json" } };
  await kubeConfig.applyToHTTPSOptions(options);
  const url = new URL(path, kubeConfig.getCurrentCluster()!.server);
  await new Promise<void>((resolve, reject) => {
    const req = request(url, options, (res) => {
      let text = "";
      res.on("data", (chunk: Buffer) => (text += chunk.toString()));
      res.on("end", () =>
        (res.statusCode ?? 0) < 300
          ? resolve()
          : reject(new Error(`POST ${path}: ${res.statusCode} ${text}`)),
      );
    });
    req.once("error", reject);
    req.end(JSON.stringify(body));
  });
}

async function until(what: string, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (await check().catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
