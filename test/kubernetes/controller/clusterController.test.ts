import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { createRegistry } from "../../../src/metrics/registry.js";
import { crdValidators, loadCrds, validateObject } from "../../chart/validateObject.js";
import {
  devnetPodsOnFakeApi,
  EVENTS,
  NODES,
  podInSync as inSync,
  PODS,
  POOLS,
  SLICES,
  startControllerOnFakeApi,
  type Cleanup,
} from "../../support/controllerOnFakeApi.js";
import { devnetPool, idlePool, podNodeObject, POOL_HEALTH } from "../../support/devnet.js";
import { startFakeApiServer, type FakeApiServer, type KubeObject } from "../../support/fakeApiServer.js";
import { waitFor } from "../../support/waitFor.js";

const cleanup: Cleanup = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

const cluster = (lights: number) => devnetPodsOnFakeApi(lights, cleanup);

/** The pool as the API server holds it. */
const poolObject = (...args: Parameters<typeof devnetPool>) => devnetPool(...args) as unknown as KubeObject;

const start = (
  api: FakeApiServer,
  config: Record<string, unknown> = {},
  registry = createRegistry({ defaultMetrics: false }),
) => startControllerOnFakeApi(api, cleanup, { config, registry }).running;

const poolStatus = (api: FakeApiServer, name = "devnet", namespace = "eth") =>
  (api.get(POOLS, namespace, name)?.status ?? {}) as {
    observedGeneration?: number;
    desiredReplicas?: number;
    requestRate?: number;
    conditions?: Array<{ type: string; status: string; reason: string }>;
  };

describe("the controller in a cluster (API simulated on loopback, real nodes)", () => {
  it("takes up a LightNodePool created while it runs, keeps routing when the pool is edited while a node is bad, rejects invalid and duplicate pools, and lets deleted pools go", async () => {
    const { devnet, api, port } = await cluster(2);
    const running = start(api);
    await running.ready;
    expect(running.pools()).toEqual([]);
    expect(running.readiness.check()).toEqual({ ok: true });

    api.put(POOLS, poolObject(devnet, port));
    await waitFor(() => inSync(api, "light-0") === "True" && inSync(api, "light-1") === "True", {
      timeoutMs: 20_000,
      what: "both pods routed",
    });
    await waitFor(() => api.get(NODES, "eth", "light-1")?.status, { what: "light-1's LightNode" });
    expect(poolStatus(api).observedGeneration).toBe(1);

    await devnet.fault("light-1", { kind: "lag", blocks: 6 });
    await waitFor(() => inSync(api, "light-1") === "False", { timeoutMs: 20_000, what: "light-1 unrouted" });
    const routedPatches = () =>
      api.calls.filter((c) => c.method === "PATCH" && c.path === "/api/v1/namespaces/eth/pods/light-0/status")
        .length;
    const before = routedPatches();

    // The SRE edits the pool while light-1 is Lagging: the new generation is reported, routing is not reshuffled.
    api.put(
      POOLS,
      poolObject(devnet, port, {
        generation: 2,
        spec: { health: { ...POOL_HEALTH, probeInterval: "250ms" } },
      }),
    );
    await waitFor(() => poolStatus(api).observedGeneration === 2, { what: "observedGeneration 2" });
    expect(inSync(api, "light-1")).toBe("False");
    expect(inSync(api, "light-0")).toBe("True");
    expect(routedPatches()).toBe(before);

    // A second pool for the same network, and a broken one (its schema passes, but every list of its pods would be
    // refused): each gets a Warning Event saying why.
    api.put(POOLS, poolObject(devnet, port, { name: "copy" }));
    api.put(
      POOLS,
      poolObject(devnet, port, {
        name: "broken",
        spec: {
          network: "other",
          chainId: 5,
          selector: { matchExpressions: [{ key: "app", operator: "In", values: [] }] },
        },
      }),
    );
    const warned = (name: string, reason: string) =>
      api
        .list(EVENTS)
        .some(
          (e) =>
            (e.regarding as { name?: string }).name === name && e.reason === reason && e.type === "Warning",
        );
    await waitFor(() => warned("copy", "DuplicateNetwork") && warned("broken", "InvalidSpec"), {
      what: "Warning Events for the rejected pools",
    });
    expect(running.pools().map((p) => p.ref.name)).toEqual(["devnet"]);

    // With its pool gone, the network passes to the other pool that claims it; when that goes too, so do the watches.
    api.remove(POOLS, "eth", "devnet");
    await waitFor(() => running.pools()[0]?.ref.name === "copy", {
      what: "the copy taking the network over",
    });
    api.remove(POOLS, "eth", "copy");
    await waitFor(() => running.pools().length === 0 && api.watching(PODS) === 0, {
      what: "the pod watch closed",
    });

    // Every call but the watches (long-lived, a connection each) went over a few kept-alive connections.
    const requests = api.calls.filter((c) => c.query.watch !== "true");
    const connections = new Set(requests.map((c) => c.connection)).size;
    expect(requests.length).toBeGreaterThan(40);
    expect(connections).toBeLessThan(requests.length / 4);
  });

  it("runs the same network in two namespaces as two pools, each with its pods, statuses and metrics; a second pool in one namespace is a duplicate", async () => {
    const { devnet, api, port } = await cluster(2);
    // light-1 serves the staging release: its pod, and a pool of the same network, live in the staging namespace.
    const staged = podNodeObject(1);
    api.remove(PODS, "eth", "light-1");
    api.put(PODS, { ...staged, metadata: { ...staged.metadata, namespace: "staging" } });
    const inNamespace = (namespace: string, name = "devnet") => {
      const pool = poolObject(devnet, port, { name });
      return { ...pool, metadata: { ...pool.metadata, namespace } };
    };
    api.put(POOLS, inNamespace("eth"));
    api.put(POOLS, inNamespace("staging"));
    const registry = createRegistry({ defaultMetrics: false });
    const running = start(api, { namespace: "" }, registry);
    await running.ready;

    await waitFor(() => inSync(api, "light-0") === "True" && inSync(api, "light-1", "staging") === "True", {
      timeoutMs: 20_000,
      what: "each namespace's pod routed by its own pool",
    });
    const lightNode = (namespace: string, pod: string) =>
      api.get(NODES, namespace, pod)?.status as { network?: string; state?: string } | undefined;
    await waitFor(
      () =>
        lightNode("eth", "light-0")?.state === "Healthy" &&
        lightNode("staging", "light-1")?.state === "Healthy",
      { timeoutMs: 20_000, what: "a LightNode in each namespace" },
    );
    expect(lightNode("eth", "light-0")?.network).toBe("devnet");
    expect(lightNode("staging", "light-1")?.network).toBe("devnet");
    expect(api.get(NODES, "eth", "light-1")).toBeUndefined();
    expect(api.get(NODES, "staging", "light-0")).toBeUndefined();
    await waitFor(
      () =>
        poolStatus(api).observedGeneration === 1 &&
        poolStatus(api, "devnet", "staging").observedGeneration === 1,
      { what: "both pools' status" },
    );
    expect(running.pools().map((p) => `${p.ref.namespace}/${p.ref.name}`)).toEqual([
      "eth/devnet",
      "staging/devnet",
    ]);

    // Each pool's series carry its namespace: one healthy node in each, not one series written by both.
    const healthy = (await registry.getSingleMetric("lightfleet_pool_healthy_nodes")!.get()).values;
    expect(healthy.map((v) => [v.labels.pool_namespace, v.labels.network, v.value]).sort()).toEqual([
      ["eth", "devnet", 1],
      ["staging", "devnet", 1],
    ]);

    // A second pool of the network in one namespace is still a duplicate.
    api.put(POOLS, inNamespace("staging", "copy"));
    await waitFor(
      () =>
        api
          .list(EVENTS)
          .some(
            (e) =>
              (e.regarding as { name?: string; namespace?: string }).name === "copy" &&
              (e.regarding as { namespace?: string }).namespace === "staging" &&
              e.reason === "DuplicateNetwork",
          ),
      { what: "a DuplicateNetwork Event on staging/copy" },
    );
    expect(running.pools().map((p) => `${p.ref.namespace}/${p.ref.name}`)).toEqual([
      "eth/devnet",
      "staging/devnet",
    ]);
  });

  it("evicts a pod an operator annotated for a restart, once, and leaves the others alone", async () => {
    const { devnet, api, port } = await cluster(2);
    const running = start(api);
    await running.ready;
    api.put(POOLS, poolObject(devnet, port));
    await waitFor(() => inSync(api, "light-0") === "True" && inSync(api, "light-1") === "True", {
      timeoutMs: 20_000,
      what: "both pods routed",
    });
    const evictions = (pod: string) =>
      api.calls.filter(
        (c) => c.method === "POST" && c.path === `/api/v1/namespaces/eth/pods/${pod}/eviction`,
      );
    expect(evictions("light-1")).toEqual([]);
    // As `kubectl annotate pod light-1 lightfleet.io/restart=...` (or lightfleet node restart --cluster) leaves it.
    const pod = api.get(PODS, "eth", "light-1")!;
    api.put(PODS, {
      ...pod,
      metadata: { ...pod.metadata, annotations: { "lightfleet.io/restart": "2026-11-24T13:00:00Z" } },
    });
    await waitFor(() => evictions("light-1").length > 0, { timeoutMs: 30_000, what: "light-1 evicted" });
    expect(running.fleet.members("eth/devnet").find((m) => m.name === "light-0")?.restarts).toEqual([]);
    // The annotated pod is gone with the eviction: no second eviction, and the healthy pod is left alone.
    await running.controller.runRound();
    await running.controller.runRound();
    expect(evictions("light-1")).toHaveLength(1);
    expect(evictions("light-0")).toEqual([]);
  });

  it("scales a pool on the rate scraped from the gateway pods, and reports it in the pool status and an Event", async () => {
    const { devnet, api, port } = await cluster(1);
    // One gateway pod whose /metrics counts 20 requests per second on the devnet network.
    const started = Date.now();
    const metrics = createServer((_req, res) => {
      const served = Math.round(((Date.now() - started) / 1000) * 20);
      res.end(
        `# TYPE lightfleet_gateway_upstream_requests_total counter\nlightfleet_gateway_upstream_requests_total{network="devnet",upstream="light-0",outcome="ok"} ${served}\n`,
      );
    });
    await new Promise<void>((resolve) => metrics.listen(0, "127.0.0.1", resolve));
    cleanup.push(() => new Promise((resolve) => metrics.close(resolve)));
    api.put(SLICES, {
      apiVersion: "discovery.k8s.io/v1",
      kind: "EndpointSlice",
      metadata: {
        name: "gw-abc",
        namespace: "eth",
        labels: { "kubernetes.io/service-name": "lightfleet-gateway" },
      },
      addressType: "IPv4",
      ports: [
        { name: "rpc", port: 8545 },
        { name: "admin", port: (metrics.address() as AddressInfo).port },
      ],
      endpoints: [
        { addresses: ["127.0.0.1"], conditions: { ready: true }, targetRef: { kind: "Pod", name: "gw-0" } },
      ],
    });
    // The StatefulSet is asked for 2 pods, one of which is still being created: the size is the workload's, not the
    // pods seen (a step from 1 would undo a scale-up under way).
    api.setScale("statefulsets", "eth", "light", 2);
    const running = start(api, { gatewayService: { name: "lightfleet-gateway" } });
    api.put(
      POOLS,
      poolObject(devnet, port, {
        spec: {
          scaling: {
            minReplicas: 1,
            maxReplicas: 3,
            targetRequestsPerNode: 5,
            rateWindow: "1s",
            source: { type: "gateway" },
          },
        },
      }),
    );
    await waitFor(() => api.scale("statefulsets", "eth", "light") === 3, {
      timeoutMs: 20_000,
      what: "the workload scaled to maxReplicas",
    });
    await waitFor(() => poolStatus(api).desiredReplicas === 3, {
      what: "desiredReplicas in the pool status",
    });
    const status = poolStatus(api);
    expect(status.requestRate).toBeGreaterThan(10);
    expect(status.conditions?.find((c) => c.type === "ScalingActive")).toMatchObject({
      status: "True",
      reason: "Scaling",
    });
    expect(api.list(EVENTS).some((e) => e.reason === "ScaledUp")).toBe(true);
    const scaleCall = api.calls.find(
      (c) => c.method === "PATCH" && c.path === "/apis/apps/v1/namespaces/eth/statefulsets/light/scale",
    )!;
    expect(scaleCall).toMatchObject({ method: "PATCH", contentType: "application/merge-patch+json" });
    expect(api.list(EVENTS).find((e) => e.reason === "ScaledUp")?.note).toMatch(/^2 -> 3/);
    // With the pool's uid, so `kubectl describe lightnodepool` lists it.
    expect((api.list(EVENTS).find((e) => e.reason === "ScaledUp")?.regarding as { uid?: string }).uid).toBe(
      api.get(POOLS, "eth", "devnet")?.metadata.uid,
    );
    expect(running.scaling.status("eth/devnet")?.condition.reason).toBe("Scaling");

    // Everything the controller wrote is what the CRDs accept (the API server would refuse or prune the rest).
    await waitFor(() => api.get(NODES, "eth", "light-0")?.status, { what: "light-0's LightNode status" });
    const validators = crdValidators(await loadCrds());
    const written = [...api.list(POOLS), ...api.list(NODES)];
    expect(written.flatMap((o) => validateObject(o as never, validators))).toEqual([]);
  });

  it("leaves a pool alone while an HPA targets its workload, and says so in the pool status", async () => {
    const { devnet, api, port } = await cluster(1);
    api.setScale("statefulsets", "eth", "light", 1);
    api.put("apis/autoscaling/v2/horizontalpodautoscalers", {
      apiVersion: "autoscaling/v2",
      kind: "HorizontalPodAutoscaler",
      metadata: { name: "light-cpu", namespace: "eth" },
      spec: {
        scaleTargetRef: { apiVersion: "apps/v1", kind: "StatefulSet", name: "light" },
        minReplicas: 1,
        maxReplicas: 4,
      },
    });
    start(api);
    api.put(
      POOLS,
      poolObject(devnet, port, {
        spec: { scaling: { minReplicas: 3, maxReplicas: 5, source: { type: "gateway" } } },
      }),
    );
    await waitFor(
      () => poolStatus(api).conditions?.find((c) => c.type === "ScalingActive")?.reason === "OtherAutoscaler",
      { timeoutMs: 20_000, what: "ScalingActive OtherAutoscaler" },
    );
    // The floor of 3 would scale the pool up, but the HPA owns it.
    expect(api.calls.filter((c) => c.method === "PATCH" && c.path.endsWith("/scale"))).toEqual([]);
    expect((api.get(POOLS, "eth", "devnet")?.status as { scalingReason?: string }).scalingReason).toContain(
      "HorizontalPodAutoscaler light-cpu",
    );
  });

  it("runs only the pools of its class when two releases share the namespace", async () => {
    const api = await startFakeApiServer();
    cleanup.push(() => api.close());
    const pool = (name: string, poolClass: string) =>
      idlePool(name, "eth", { "lightfleet.io/class": poolClass }) as unknown as KubeObject;
    api.put(POOLS, pool("mainnet", "blue"));
    api.put(POOLS, pool("sepolia", "green"));
    const blue = start(api, { poolSelector: "lightfleet.io/class=blue", lease: { name: "blue" } });
    const green = start(api, { poolSelector: "lightfleet.io/class=green", lease: { name: "green" } });
    await Promise.all([blue.ready, green.ready]);
    await waitFor(() => blue.pools().length === 1 && green.pools().length === 1, { what: "each its pool" });
    expect(blue.pools().map((p) => p.ref.name)).toEqual(["mainnet"]);
    expect(green.pools().map((p) => p.ref.name)).toEqual(["sepolia"]);
    // Each leads on its own Lease: both act.
    await waitFor(() => blue.elector.isLeader() && green.elector.isLeader(), { what: "two leaders" });
  });
});
