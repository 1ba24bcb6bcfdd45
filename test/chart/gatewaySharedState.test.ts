import { parse } from "yaml";
import { describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config/loadConfig.js";
import { CHART_DIR, helm, renderChart } from "../support/helm.js";
import type { K8sObject } from "../support/helm.js";

/** The lightfleet config file the chart renders, parsed as lightfleet parses it (with `env`). */
function renderedConfig(objects: K8sObject[], env: NodeJS.ProcessEnv = {}) {
  const map = objects.find((o) => o.kind === "ConfigMap" && o.metadata.name === "lightfleet-config");
  if (!map) throw new Error("no lightfleet-config ConfigMap");
  const text = (map.data as Record<string, string>)["lightfleet.yaml"]!;
  return parseConfig(parse(text), "chart", env);
}

type Env = Array<{ name: string; valueFrom?: { secretKeyRef?: { name: string; key: string } } }>;

function gatewayEnv(objects: K8sObject[]): Env {
  const gateway = objects.find((o) => o.kind === "Deployment" && o.metadata.name === "lightfleet-gateway")!;
  return (gateway.spec as { template: { spec: { containers: Array<{ env: Env }> } } }).template.spec
    .containers[0]!.env;
}

const bundled = (objects: K8sObject[]) =>
  objects.filter((o) => o.metadata.name === "lightfleet-gateway-redis").map((o) => o.kind);

describe("the chart's gateway.sharedState", () => {
  it("shares state through a Redis it runs itself by default (two replicas), and only then", async () => {
    const { objects } = await renderChart();
    expect(renderedConfig(objects).gateway.sharedState).toEqual({
      backend: "redis",
      url: "redis://lightfleet-gateway-redis:6379",
      keyPrefix: "lightfleet:",
      commandTimeout: 250,
    });
    expect(bundled(objects).sort()).toEqual(["Deployment", "Service"]);

    const single = await renderChart({ set: ["gateway.replicas=1"] });
    expect(renderedConfig(single.objects).gateway.sharedState).toEqual({ backend: "memory" });
    expect(bundled(single.objects)).toEqual([]);

    // The HPA may add replicas: shared as well, even from one.
    const scaled = await renderChart({ set: ["gateway.replicas=1", "gateway.autoscaling.enabled=true"] });
    expect(renderedConfig(scaled.objects).gateway.sharedState.backend).toBe("redis");
  });

  it("takes an external Redis's URL from a Secret, given to the gateway pods only", async () => {
    const { objects } = await renderChart({ set: ["gateway.sharedState.existingSecret=redis-url"] });
    expect(bundled(objects)).toEqual([]);
    expect(gatewayEnv(objects).find((e) => e.name === "REDIS_URL")).toEqual({
      name: "REDIS_URL",
      valueFrom: { secretKeyRef: { name: "redis-url", key: "REDIS_URL" } },
    });
    const url = "rediss://:secret@redis.example.org:6380/1";
    expect(renderedConfig(objects, { REDIS_URL: url }).gateway.sharedState).toMatchObject({
      backend: "redis",
      url,
    });
    // The controller and key API read the same file without the variable, and never connect.
    expect(renderedConfig(objects).gateway.sharedState.backend).toBe("redis");

    const plain = await renderChart({ set: ["gateway.sharedState.url=redis://valkey.cache:6379"] });
    expect(renderedConfig(plain.objects).gateway.sharedState).toMatchObject({
      url: "redis://valkey.cache:6379",
    });
    expect(bundled(plain.objects)).toEqual([]);
  });

  it("refuses several replicas with in-process state unless told it is wanted", async () => {
    for (const set of [
      ["gateway.sharedState.backend=memory"],
      ["gateway.sharedState.backend=memory", "gateway.replicas=1", "gateway.autoscaling.enabled=true"],
    ]) {
      const refused = await helm(["template", "x", CHART_DIR, ...set.flatMap((s) => ["--set", s])]);
      expect(refused.code).not.toBe(0);
      expect(refused.stderr).toMatch(
        /gateway\.sharedState\.backend is memory with more than one gateway replica/,
      );
    }
    const accepted = await renderChart({
      set: ["gateway.sharedState.backend=memory", "gateway.sharedState.allowInProcessWithReplicas=true"],
    });
    expect(renderedConfig(accepted.objects).gateway.sharedState).toEqual({ backend: "memory" });

    const badUrl = await helm(["template", "x", CHART_DIR, "--set", "gateway.sharedState.url=http://r:6379"]);
    expect(badUrl.code).not.toBe(0);
    expect(badUrl.stderr).toMatch(/sharedState/);
  });

  it("lets only the gateway reach the bundled Redis when network policies are on", async () => {
    const { objects } = await renderChart({ set: ["networkPolicy.enabled=true"] });
    const policy = objects.find(
      (o) => o.kind === "NetworkPolicy" && o.metadata.name === "lightfleet-gateway-redis",
    );
    expect(policy?.spec).toMatchObject({
      policyTypes: ["Ingress"],
      ingress: [
        {
          from: [{ podSelector: { matchLabels: { "app.kubernetes.io/component": "gateway" } } }],
        },
      ],
    });
  });
});
