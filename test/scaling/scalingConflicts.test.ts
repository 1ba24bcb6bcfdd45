import { KubeConfig } from "@kubernetes/client-node";
import nock from "nock";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { listAutoscalers } from "../../src/kubernetes/scaling/listAutoscalers.js";
import { describeConflicts, findScalingConflicts } from "../../src/scaling/scalingConflicts.js";

const workload = { apiVersion: "apps/v1", kind: "StatefulSet", name: "lightfleet-mainnet" };

describe("findScalingConflicts", () => {
  it("finds HPAs and ScaledObjects that target the workload, and nothing else", () => {
    const conflicts = findScalingConflicts(workload, {
      horizontalPodAutoscalers: [
        { metadata: { name: "by-hand" }, spec: { scaleTargetRef: { ...workload } } },
        {
          metadata: { name: "other" },
          spec: { scaleTargetRef: { kind: "StatefulSet", name: "other-nodes" } },
        },
        {
          metadata: { name: "deploy" },
          spec: { scaleTargetRef: { kind: "Deployment", name: workload.name } },
        },
        {
          metadata: { name: "keda-hpa-nodes", ownerReferences: [{ kind: "ScaledObject", name: "nodes" }] },
          spec: { scaleTargetRef: { apiVersion: "apps/v1", kind: "StatefulSet", name: workload.name } },
        },
      ],
      scaledObjects: [
        {
          metadata: { name: "nodes" },
          spec: { scaleTargetRef: { kind: "StatefulSet", name: workload.name } },
        },
        // KEDA's default target kind is a Deployment.
        { metadata: { name: "default-kind" }, spec: { scaleTargetRef: { name: workload.name } } },
        {
          metadata: { name: "other-group" },
          spec: {
            scaleTargetRef: { apiVersion: "example.com/v1", kind: "StatefulSet", name: workload.name },
          },
        },
      ],
    });
    expect(conflicts).toEqual([
      { kind: "ScaledObject", name: "nodes" },
      { kind: "HorizontalPodAutoscaler", name: "by-hand" },
    ]);
    expect(describeConflicts(conflicts)).toBe(
      "ScaledObject nodes, HorizontalPodAutoscaler by-hand scale this workload; lightfleet leaves scaling to them",
    );
  });

  it("matches a Deployment KEDA targets by default", () => {
    expect(
      findScalingConflicts(
        { kind: "Deployment", name: "nodes" },
        {
          horizontalPodAutoscalers: [],
          scaledObjects: [{ metadata: { name: "so" }, spec: { scaleTargetRef: { name: "nodes" } } }],
        },
      ),
    ).toEqual([{ kind: "ScaledObject", name: "so" }]);
  });
});

describe("listAutoscalers", () => {
  const server = "https://k8s.test:6443";
  let kubeConfig: KubeConfig;

  beforeAll(() => {
    kubeConfig = new KubeConfig();
    kubeConfig.loadFromOptions({
      clusters: [{ name: "test", server, skipTLSVerify: true }],
      users: [{ name: "test", token: "t0ken" }],
      contexts: [{ name: "test", cluster: "test", user: "test", namespace: "fleet" }],
      currentContext: "test",
    });
    nock.disableNetConnect();
  });

  afterEach(() => {
    nock.cleanAll();
  });

  afterAll(() => {
    nock.enableNetConnect();
  });

  it("lists HPAs and ScaledObjects of the namespace", async () => {
    const hpa = {
      metadata: { name: "by-hand" },
      spec: { scaleTargetRef: { apiVersion: "apps/v1", kind: "StatefulSet", name: "n" }, maxReplicas: 3 },
    };
    const so = { metadata: { name: "nodes" }, spec: { scaleTargetRef: { kind: "StatefulSet", name: "n" } } };
    const api = nock(server)
      .matchHeader("authorization", "Bearer t0ken")
      .get("/apis/autoscaling/v2/namespaces/fleet/horizontalpodautoscalers")
      .reply(200, {
        apiVersion: "autoscaling/v2",
        kind: "HorizontalPodAutoscalerList",
        metadata: {},
        items: [hpa],
      })
      .get("/apis/keda.sh/v1alpha1/namespaces/fleet/scaledobjects")
      .reply(200, { apiVersion: "keda.sh/v1alpha1", kind: "ScaledObjectList", items: [so] });
    const found = await listAutoscalers(kubeConfig, "fleet");
    expect(found.scaledObjects).toEqual([so]);
    expect(found.horizontalPodAutoscalers.map((h) => h.metadata?.name)).toEqual(["by-hand"]);
    expect(found.horizontalPodAutoscalers[0]!.spec?.scaleTargetRef).toMatchObject({
      kind: "StatefulSet",
      name: "n",
    });
    expect(api.isDone()).toBe(true);
  });

  it("takes a cluster without KEDA as having no ScaledObject", async () => {
    nock(server)
      .get("/apis/autoscaling/v2/namespaces/fleet/horizontalpodautoscalers")
      .reply(200, { items: [] })
      .get("/apis/keda.sh/v1alpha1/namespaces/fleet/scaledobjects")
      .reply(404, { kind: "Status", status: "Failure", reason: "NotFound", code: 404 });
    expect(await listAutoscalers(kubeConfig, "fleet")).toEqual({
      horizontalPodAutoscalers: [],
      scaledObjects: [],
    });
  });

  it("throws when the controller may not list HPAs, so the caller does not scale", async () => {
    nock(server)
      .get("/apis/autoscaling/v2/namespaces/fleet/horizontalpodautoscalers")
      .reply(403, { kind: "Status", status: "Failure", reason: "Forbidden", code: 403 })
      .get("/apis/keda.sh/v1alpha1/namespaces/fleet/scaledobjects")
      .reply(200, { items: [] });
    await expect(listAutoscalers(kubeConfig, "fleet")).rejects.toThrow(/403/);
  });
});
