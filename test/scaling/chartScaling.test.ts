import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { parseConfigText } from "../../src/config/loadConfig.js";
import { NAMESPACE, renderChart, type K8sObject } from "../support/helm.js";

const dir = mkdtempSync(join(tmpdir(), "lightfleet-chart-scaling-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The chart rendered with one pool (a workload of the operator's) in the given autoscaling mode. */
async function render(mode: string): Promise<K8sObject[]> {
  const file = join(dir, `${mode}.yaml`);
  writeFileSync(
    file,
    // Written as a person would: `mode: off` unquoted, which Helm (YAML 1.1) reads as false.
    stringify({
      autoscaling: { mode },
      networks: [
        {
          name: "mainnet",
          preset: "mainnet",
          reservedPeers: [{ name: "full-0", http: "http://full-0.eth.svc:8545" }],
          scaling: { minReplicas: 2, maxReplicas: 8, targetRequestsPerNode: 80 },
          pool: { workload: { kind: "StatefulSet", name: "my-nodes" }, selector: { app: "my-nodes" } },
        },
      ],
    }),
  );
  return (await renderChart({ extraArgs: ["--values", file] })).objects;
}

function renderedScaling(objects: K8sObject[]): Record<string, unknown> {
  const configMap = objects.find((o) => o.kind === "ConfigMap" && o.metadata.name.endsWith("-config"))!;
  const text = (configMap.data as Record<string, string>)["lightfleet.yaml"]!;
  // The rendered file is lightfleet's own format and passes its validation.
  const config = parseConfigText(text, "chart", {});
  return config.networks[0]!.scaling as unknown as Record<string, unknown>;
}

describe("the chart's autoscaling modes", () => {
  it("controller: the controller scales, no other autoscaler is rendered", async () => {
    const objects = await render("controller");
    expect(renderedScaling(objects)).toMatchObject({
      enabled: true,
      minReplicas: 2,
      targetRequestsPerNode: 80,
    });
    expect(objects.filter((o) => o.kind === "HorizontalPodAutoscaler" || o.kind === "ScaledObject")).toEqual(
      [],
    );
  });

  it("keda: a ScaledObject on the exported rate with the pool's target; the controller only reports", async () => {
    const objects = await render("keda");
    expect(renderedScaling(objects)).toMatchObject({ enabled: false });
    const scaledObject = objects.find((o) => o.kind === "ScaledObject")!;
    expect(scaledObject.spec).toMatchObject({
      scaleTargetRef: { apiVersion: "apps/v1", kind: "StatefulSet", name: "my-nodes" },
      minReplicaCount: 2,
      maxReplicaCount: 8,
      triggers: [
        {
          type: "prometheus",
          metadata: {
            query: `max(lightfleet_pool_request_rate{pool_namespace="${NAMESPACE}",network="mainnet"})`,
            threshold: "80",
          },
        },
      ],
    });
  });

  it("hpa: an HPA on the external metric with the pool's target; off: nobody scales", async () => {
    const hpa = (await render("hpa")).find((o) => o.kind === "HorizontalPodAutoscaler")!;
    expect(hpa.spec).toMatchObject({
      minReplicas: 2,
      maxReplicas: 8,
      metrics: [
        {
          type: "External",
          external: {
            metric: {
              name: "lightfleet_pool_request_rate",
              selector: { matchLabels: { pool_namespace: NAMESPACE, network: "mainnet" } },
            },
            target: { type: "AverageValue", averageValue: "80" },
          },
        },
      ],
    });
    const off = await render("off");
    expect(readFileSync(join(dir, "off.yaml"), "utf8")).toContain("mode: off\n");
    expect(renderedScaling(off)).toMatchObject({ enabled: false });
    expect(off.filter((o) => o.kind === "HorizontalPodAutoscaler" || o.kind === "ScaledObject")).toEqual([]);
  });

  it("lets the controller list the HPAs and ScaledObjects it must not fight", async () => {
    const role = (await render("controller")).find(
      (o) => o.kind === "Role" && o.metadata.name.endsWith("-controller"),
    )!;
    const rules = role.rules as Array<{ apiGroups: string[]; resources: string[]; verbs: string[] }>;
    expect(rules).toContainEqual({
      apiGroups: ["autoscaling"],
      resources: ["horizontalpodautoscalers"],
      verbs: ["list"],
    });
    expect(rules).toContainEqual({ apiGroups: ["keda.sh"], resources: ["scaledobjects"], verbs: ["list"] });
  });
});
