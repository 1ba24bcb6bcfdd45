import { afterEach, describe, expect, it } from "vitest";
import { KubernetesFleet } from "../../../src/kubernetes/pods/kubernetesFleet.js";
import { createLogger, silentLogger } from "../../../src/log/logger.js";
import { createKubeCacheMetrics } from "../../../src/metrics/kubeCacheMetrics.js";
import { createRegistry } from "../../../src/metrics/registry.js";
import { startFakeApiServer, type FakeApiServer, type KubeObject } from "../../support/fakeApiServer.js";
import { waitFor } from "../../support/waitFor.js";

const PODS = "api/v1/pods";
const cleanup: Array<() => unknown> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

const pod = (name: string): KubeObject => ({
  apiVersion: "v1",
  kind: "Pod",
  metadata: { name, namespace: "eth", labels: { app: "light" } },
  spec: { containers: [{ name: "node" }], readinessGates: [{ conditionType: "lightfleet.io/in-sync" }] },
  status: { podIP: "10.0.0.1", conditions: [] },
});

async function setup(watchSilenceMs?: number, bookmarkIntervalMs?: number) {
  const api = await startFakeApiServer(bookmarkIntervalMs ? { bookmarkIntervalMs } : {});
  cleanup.push(() => api.close());
  api.put(PODS, pod("light-0"));
  const registry = createRegistry({ defaultMetrics: false });
  const fleet = new KubernetesFleet({
    kubeConfig: api.kubeConfig(),
    cacheMetrics: createKubeCacheMetrics(registry),
    pools: [
      {
        key: "mainnet",
        network: "mainnet",
        namespace: "eth",
        labelSelector: "app=light",
        rpcPort: 8545,
        workload: { kind: "StatefulSet", name: "light" },
      },
    ],
    logger: process.env.DEBUG_K8S ? createLogger({ format: "json", level: "debug" }) : silentLogger(),
    ...(watchSilenceMs !== undefined ? { watchSilenceMs } : {}),
  });
  fleet.start();
  cleanup.push(() => fleet.stop());
  const names = () =>
    fleet
      .members("mainnet")
      .map((m) => m.name)
      .join(",");
  await waitFor(() => names() === "light-0" && api.watching(PODS) === 1, {
    what: "the first list and watch",
  });
  /** lightfleet_kube_watch_restarts_total of the pod watch for a reason. */
  const restarts = async (reason: string) => {
    const metric = (await registry.getSingleMetric("lightfleet_kube_watch_restarts_total")!.get()).values;
    return metric.find((v) => v.labels.resource === "pods" && v.labels.reason === reason)?.value ?? 0;
  };
  return { api, fleet, names, registry, restarts };
}

const watches = (api: FakeApiServer) =>
  api.calls.filter((c) => c.path.endsWith("/pods") && c.query.watch).length;

describe("pod watch scenarios against a simulated API server", () => {
  it("restarts a watch that went silent and catches up from its resource version, without a relist", async () => {
    const { api, fleet, names, registry, restarts } = await setup(300);
    const lists = () => api.calls.filter((c) => c.path.endsWith("/pods") && !c.query.watch).length;
    const listsBefore = lists();
    const syncedBefore = fleet.oldestSync()!;
    api.setSilent(true); // the connection stays open, nothing arrives
    api.put(PODS, pod("light-1"));
    await waitFor(() => names() === "light-0,light-1", { what: "the new pod seen after the watchdog" });
    expect(watches(api)).toBeGreaterThanOrEqual(2);
    expect(lists()).toBe(listsBefore);
    expect(fleet.oldestSync()!).toBeGreaterThan(syncedBefore);
    expect(await restarts("silent")).toBeGreaterThanOrEqual(1);
    expect(await registry.metrics()).toMatch(
      /lightfleet_kube_cache_age_seconds\{resource="pods",scope="mainnet"\} \d/,
    );
  });

  it("takes a quiet collection's bookmarks as confirmation, and resumes a cut watch from the bookmark's version", async () => {
    const { api, fleet } = await setup(undefined, 100);
    const syncedBefore = fleet.oldestSync()!;
    // Writes elsewhere move the resource version; the pod watch sees none of them, only the bookmarks.
    api.put("api/v1/configmaps", {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "c", namespace: "eth" },
    });
    const moved = api.resourceVersion();
    const sent = api.bookmarksSent();
    await waitFor(() => api.bookmarksSent() >= sent + 2 && fleet.oldestSync()! > syncedBefore, {
      what: "bookmarks confirming the pod cache",
    });
    api.dropWatches();
    await waitFor(() => api.watching(PODS) === 1, { what: "the watch made again" });
    const resumed = api.calls.filter((c) => c.path.endsWith("/pods") && c.query.watch).at(-1)!;
    expect(Number(resumed.query.resourceVersion)).toBe(moved);
  });

  it("makes another watch when a watch request is never answered", async () => {
    const { api, names, restarts } = await setup(300);
    api.setUnanswered(true);
    api.dropWatches(); // the re-made watch hangs before the server's first byte
    await waitFor(() => api.unansweredWatches() >= 1, { what: "a hanging watch request" });
    api.setUnanswered(false);
    api.put(PODS, pod("light-1"));
    await waitFor(() => names() === "light-0,light-1" && api.watching(PODS) === 1, {
      what: "a new watch once the hanging one was given up",
    });
    expect(await restarts("unanswered")).toBeGreaterThanOrEqual(1);
  });

  it("lists again when a list (after a 410) is never answered", async () => {
    const { api, names, restarts } = await setup(300);
    api.setListsUnanswered(true);
    api.expireWatches();
    await waitFor(() => api.unansweredWatches() >= 1, { what: "a hanging list" });
    api.put(PODS, pod("light-1"));
    api.setListsUnanswered(false);
    await waitFor(() => names() === "light-0,light-1" && api.watching(PODS) === 1, {
      what: "a list and a watch once the hanging list was given up",
    });
    expect(await restarts("unanswered")).toBeGreaterThanOrEqual(1);
  });

  it("re-makes a watch cut mid-stream and relists after 410 Gone", async () => {
    const { api, names, restarts } = await setup();
    api.dropWatches();
    api.put(PODS, pod("light-1"));
    await waitFor(() => names() === "light-0,light-1", { what: "the pod added after the cut" });

    api.remove(PODS, "eth", "light-0");
    await waitFor(() => names() === "light-1", { what: "the deletion" });
    api.expireWatches();
    api.put(PODS, pod("light-2"));
    await waitFor(() => names() === "light-1,light-2" && api.watching(PODS) === 1, {
      what: "the relist after 410",
    });
    expect(await restarts("failed")).toBeGreaterThanOrEqual(1);
    expect(await restarts("expired")).toBe(1);
  });

  it("a pod deleted while its restart is under way is gone: no eviction retried, no restart recorded", async () => {
    const { api, fleet } = await setup();
    api.setSilent(true); // the cache still has light-0 when the controller decides to restart it
    api.remove(PODS, "eth", "light-0");
    expect(fleet.members("mainnet").map((m) => m.name)).toEqual(["light-0"]);
    expect(await fleet.restart("mainnet", "light-0", "stall")).toEqual({ outcome: "gone" });
    expect(fleet.members("mainnet")[0]!.restarts).toEqual([]);
    const evictions = api.calls.filter((c) => c.path.endsWith("/eviction"));
    expect(evictions).toHaveLength(1);
    expect(api.calls.filter((c) => c.method === "DELETE")).toEqual([]);
  });

  it("a pod replaced under a stale cache is not evicted in its predecessor's place", async () => {
    const { api, fleet } = await setup();
    const judged = api.get(PODS, "eth", "light-0")!.metadata.uid;
    api.setSilent(true); // the cache still has the old light-0 when the controller decides to restart it
    api.remove(PODS, "eth", "light-0");
    api.put(PODS, pod("light-0")); // the StatefulSet's new light-0: same name, new uid
    const replacement = api.get(PODS, "eth", "light-0")!.metadata.uid;
    expect(replacement).not.toBe(judged);
    expect(await fleet.restart("mainnet", "light-0", "stall")).toEqual({ outcome: "gone" });
    expect(api.get(PODS, "eth", "light-0")?.metadata.uid).toBe(replacement);
    const eviction = api.calls.find((c) => c.path.endsWith("/eviction"));
    expect(eviction?.body).toMatchObject({ deleteOptions: { preconditions: { uid: judged } } });
    expect(fleet.members("mainnet")[0]!.restarts).toEqual([]);
  });

  it("a refused eviction (PodDisruptionBudget) is deferred, never turned into a delete", async () => {
    const { api, fleet } = await setup();
    // light-0 is the pool's one ready pod and the budget wants one available: the eviction is refused (429).
    api.put(PODS, {
      ...pod("light-0"),
      status: { phase: "Running", conditions: [{ type: "Ready", status: "True" }] },
    });
    api.put("apis/policy/v1/poddisruptionbudgets", {
      apiVersion: "policy/v1",
      kind: "PodDisruptionBudget",
      metadata: { name: "light", namespace: "eth" },
      spec: { minAvailable: 1, selector: { matchLabels: { app: "light" } } },
    });
    const result = await fleet.restart("mainnet", "light-0", "stall");
    expect(result.outcome).toBe("deferred");
    expect(api.get(PODS, "eth", "light-0")).toBeDefined();
    expect(api.calls.filter((c) => c.method === "DELETE")).toEqual([]);
  });
});
