import { afterEach, describe, expect, it } from "vitest";
import { startFakeApiServer, type FakeApiServer, type KubeObject } from "../support/fakeApiServer.js";
import { waitFor } from "../support/waitFor.js";

/**
 * The simulated API server answers as kube-apiserver does wherever the product's calls meet it, so a test that passes
 * on it would not fail on a real control plane for a reason the simulator hid.
 */
const PODS = "api/v1/pods";
const POOLS = "apis/lightfleet.io/v1alpha1/lightnodepools";
const NODES = "apis/lightfleet.io/v1alpha1/lightnodes";
const PDBS = "apis/policy/v1/poddisruptionbudgets";
const POOL_PATH = "/apis/lightfleet.io/v1alpha1/namespaces/eth/lightnodepools";
const MERGE = "application/merge-patch+json";
const STRATEGIC = "application/strategic-merge-patch+json";
const JSON_PATCH = "application/json-patch+json";

const cleanup: Array<() => unknown> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

async function server(options?: Parameters<typeof startFakeApiServer>[0]): Promise<FakeApiServer> {
  const api = await startFakeApiServer(options);
  cleanup.push(() => api.close());
  return api;
}

interface Answer {
  status: number;
  body: Record<string, unknown> & { metadata?: KubeObject["metadata"]; reason?: string; message?: string };
}

async function call(
  api: FakeApiServer,
  method: string,
  path: string,
  body?: unknown,
  contentType = "application/json",
): Promise<Answer> {
  const res = await fetch(`${api.url}${path}`, {
    method,
    headers: { "content-type": contentType },
    ...(body === undefined ? {} : { body: typeof body === "string" ? body : JSON.stringify(body) }),
  });
  return { status: res.status, body: (await res.json()) as Answer["body"] };
}

const poolSpec = () => ({
  network: "mainnet",
  chainId: 1,
  workloadRef: { kind: "StatefulSet", name: "light" },
  selector: { matchLabels: { app: "light" } },
  reservedPeers: [{ http: "http://full-0:8545" }],
});

const newPool = (extra: Record<string, unknown> = {}) => ({
  apiVersion: "lightfleet.io/v1alpha1",
  kind: "LightNodePool",
  metadata: { name: "mainnet", namespace: "eth" },
  spec: poolSpec(),
  ...extra,
});

const pod = (
  name: string,
  labels: Record<string, string> = {},
  extra: Partial<KubeObject> = {},
): KubeObject => ({
  apiVersion: "v1",
  kind: "Pod",
  metadata: { name, namespace: "eth", labels },
  spec: { containers: [{ name: "node", image: "anvil" }] },
  status: { phase: "Running", conditions: [{ type: "Ready", status: "True" }] },
  ...extra,
});

describe("the simulated API server, as kube-apiserver answers", () => {
  describe("status subresource", () => {
    it("a status write changes only the status, a main-resource write never the status", async () => {
      const api = await server();
      const created = await call(api, "POST", POOL_PATH, newPool({ status: { replicas: 9 } }));
      expect(created.status).toBe(201);
      // A create ignores the status of a kind with a status subresource.
      expect(created.body.status).toBeUndefined();

      const viaStatus = await call(
        api,
        "PATCH",
        `${POOL_PATH}/mainnet/status`,
        { spec: { network: "sepolia" }, metadata: { labels: { sneaky: "yes" } }, status: { replicas: 1 } },
        MERGE,
      );
      expect(viaStatus.status).toBe(200);
      expect(viaStatus.body.spec).toMatchObject({ network: "mainnet" });
      expect(viaStatus.body.status).toEqual({ replicas: 1 });
      expect(api.get(POOLS, "eth", "mainnet")?.metadata.labels).toBeUndefined();

      const viaMain = await call(
        api,
        "PATCH",
        `${POOL_PATH}/mainnet`,
        { spec: { network: "holesky" }, status: { replicas: 5 } },
        MERGE,
      );
      expect(viaMain.status).toBe(200);
      expect(api.get(POOLS, "eth", "mainnet")).toMatchObject({
        spec: { network: "holesky" },
        status: { replicas: 1 },
      });

      // A replace through /status likewise keeps the spec.
      const current = api.get(POOLS, "eth", "mainnet")!;
      const put = await call(api, "PUT", `${POOL_PATH}/mainnet/status`, {
        ...current,
        spec: { ...poolSpec(), network: "goerli" },
        status: { replicas: 2 },
      });
      expect(put.status).toBe(200);
      expect(api.get(POOLS, "eth", "mainnet")).toMatchObject({
        spec: { network: "holesky" },
        status: { replicas: 2 },
      });

      // Pods too: a pods/status patch cannot change the spec.
      api.put(PODS, pod("light-0"));
      await call(
        api,
        "PATCH",
        "/api/v1/namespaces/eth/pods/light-0/status",
        { spec: { nodeName: "elsewhere" }, status: { podIP: "10.0.0.9" } },
        STRATEGIC,
      );
      expect(api.get(PODS, "eth", "light-0")).toMatchObject({ status: { podIP: "10.0.0.9" } });
      expect((api.get(PODS, "eth", "light-0")?.spec as { nodeName?: string }).nodeName).toBeUndefined();
    });

    it("a kind without a status subresource answers 404 on /status", async () => {
      const api = await server();
      api.put("api/v1/configmaps", {
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: "c", namespace: "eth" },
      });
      const answer = await call(
        api,
        "PATCH",
        "/api/v1/namespaces/eth/configmaps/c/status",
        { data: {} },
        MERGE,
      );
      expect(answer.status).toBe(404);
    });
  });

  it("sets metadata.generation to 1 on create and moves it on spec changes only", async () => {
    const api = await server();
    const generation = () => api.get(POOLS, "eth", "mainnet")?.metadata.generation;
    const created = await call(
      api,
      "POST",
      POOL_PATH,
      newPool({ metadata: { name: "mainnet", generation: 7 } }),
    );
    expect(created.body.metadata?.generation).toBe(1);

    await call(api, "PATCH", `${POOL_PATH}/mainnet`, { spec: { chainId: 5 } }, MERGE);
    expect(generation()).toBe(2);
    // The same spec again, a status write, a label: no new generation.
    await call(api, "PATCH", `${POOL_PATH}/mainnet`, { spec: { chainId: 5 } }, MERGE);
    await call(api, "PATCH", `${POOL_PATH}/mainnet/status`, { status: { replicas: 3 } }, MERGE);
    await call(api, "PATCH", `${POOL_PATH}/mainnet`, { metadata: { labels: { team: "sre" } } }, MERGE);
    expect(generation()).toBe(2);
    // A client cannot set it either.
    await call(api, "PATCH", `${POOL_PATH}/mainnet`, { metadata: { generation: 40 } }, MERGE);
    expect(generation()).toBe(2);

    const current = api.get(POOLS, "eth", "mainnet")!;
    await call(api, "PUT", `${POOL_PATH}/mainnet`, { ...current, spec: { ...poolSpec(), chainId: 10 } });
    expect(generation()).toBe(3);

    // The fixture's own writes follow the same rule.
    api.put(POOLS, { ...current, spec: { ...poolSpec(), chainId: 11 } });
    expect(generation()).toBe(4);
  });

  it("answers 415 to a strategic-merge patch of a custom resource, and takes one on pods", async () => {
    const api = await server();
    await call(api, "POST", POOL_PATH, newPool());
    const answer = await call(
      api,
      "PATCH",
      `${POOL_PATH}/mainnet/status`,
      { status: { replicas: 1 } },
      STRATEGIC,
    );
    expect(answer.status).toBe(415);
    expect(answer.body).toMatchObject({ kind: "Status", reason: "UnsupportedMediaType", code: 415 });
    expect(api.get(POOLS, "eth", "mainnet")?.status).toBeUndefined();

    const unknown = await call(api, "PATCH", `${POOL_PATH}/mainnet`, { spec: {} }, "text/plain");
    expect(unknown.status).toBe(415);

    api.put(PODS, pod("light-0"));
    const podPatch = await call(
      api,
      "PATCH",
      "/api/v1/namespaces/eth/pods/light-0/status",
      { status: { conditions: [{ type: "lightfleet.io/in-sync", status: "True" }] } },
      STRATEGIC,
    );
    expect(podPatch.status).toBe(200);
    expect((podPatch.body.status as { conditions: unknown[] }).conditions).toHaveLength(2);
  });

  describe("label selectors", () => {
    const names = async (api: FakeApiServer, selector: string) => {
      const answer = await call(
        api,
        "GET",
        `/api/v1/namespaces/eth/pods?labelSelector=${encodeURIComponent(selector)}`,
      );
      expect(answer.status).toBe(200);
      return (answer.body.items as KubeObject[]).map((o) => o.metadata.name).sort();
    };

    it("reads set-based requirements as the API server does", async () => {
      const api = await server();
      api.put(PODS, pod("x", { app: "x", tier: "rpc" }));
      api.put(PODS, pod("y", { app: "y" }));
      api.put(PODS, pod("z", { app: "z", tier: "web" }));
      api.put(PODS, pod("none"));
      expect(await names(api, "app in (x,y)")).toEqual(["x", "y"]);
      expect(await names(api, "app in (x, y)")).toEqual(["x", "y"]);
      expect(await names(api, "app notin (x)")).toEqual(["none", "y", "z"]);
      expect(await names(api, "!tier")).toEqual(["none", "y"]);
      expect(await names(api, "tier")).toEqual(["x", "z"]);
      expect(await names(api, "app!=x")).toEqual(["none", "y", "z"]);
      expect(await names(api, "app==x")).toEqual(["x"]);
      expect(await names(api, "app in (x,y,z),tier notin (web)")).toEqual(["x", "y"]);
      expect(await names(api, "app=x,tier=web")).toEqual([]);
      expect(await names(api, "")).toEqual(["none", "x", "y", "z"]);

      // A watch reads them the same way.
      const res = await fetch(
        `${api.url}/api/v1/namespaces/eth/pods?watch=true&resourceVersion=0&labelSelector=${encodeURIComponent("app in (x,y)")}`,
      );
      const seen = await readEvents(res, (events) => events.length >= 2);
      expect(seen.map((e) => e.object.metadata.name).sort()).toEqual(["x", "y"]);
    });

    it("answers 400 to a selector it cannot parse, on lists and watches", async () => {
      const api = await server();
      api.put(PODS, pod("x", { app: "x" }));
      for (const bad of [
        "app in (x",
        "app in x",
        "=x",
        "app=a b",
        "-app=x",
        "app in ()",
        "app=x,",
        "a/b/c=d",
      ]) {
        for (const watch of ["", "&watch=true"]) {
          const answer = await call(
            api,
            "GET",
            `/api/v1/namespaces/eth/pods?labelSelector=${encodeURIComponent(bad)}${watch}`,
          );
          expect({ bad, watch, status: answer.status, reason: answer.body.reason }).toEqual({
            bad,
            watch,
            status: 400,
            reason: "BadRequest",
          });
        }
      }
    });
  });

  describe("JSON Patch", () => {
    it("applies RFC 6902 operations, test included, and refuses a failed test with 422", async () => {
      const api = await server();
      api.put(PODS, pod("light-0", { app: "x" }));
      const path = "/api/v1/namespaces/eth/pods/light-0";
      const applied = await call(
        api,
        "PATCH",
        path,
        [
          { op: "test", path: "/metadata/labels/app", value: "x" },
          { op: "replace", path: "/metadata/labels/app", value: "w" },
          { op: "add", path: "/metadata/labels/tier", value: "rpc" },
        ],
        JSON_PATCH,
      );
      expect(applied.status).toBe(200);
      expect(api.get(PODS, "eth", "light-0")?.metadata.labels).toEqual({ app: "w", tier: "rpc" });

      const failed = await call(
        api,
        "PATCH",
        path,
        [
          { op: "test", path: "/metadata/labels/app", value: "x" },
          { op: "replace", path: "/metadata/labels/app", value: "v" },
        ],
        JSON_PATCH,
      );
      expect(failed.status).toBe(422);
      expect(failed.body).toMatchObject({ kind: "Status", reason: "Invalid" });
      expect(api.get(PODS, "eth", "light-0")?.metadata.labels).toEqual({ app: "w", tier: "rpc" });

      // Operations that decode but cannot apply are 422 too, as the API server's JSON Patch library finds them.
      for (const operation of [
        { op: "remove", path: "/metadata/labels/none" },
        { op: "jump", path: "/metadata" },
        { op: "add", value: 1 },
      ]) {
        const refused = await call(api, "PATCH", path, [operation], JSON_PATCH);
        expect({ operation, status: refused.status }).toEqual({ operation, status: 422 });
      }
    });

    it("refuses malformed bodies with a Status and keeps serving", async () => {
      const api = await server();
      api.put(PODS, pod("light-0", { app: "x" }));
      const path = "/api/v1/namespaces/eth/pods/light-0";
      const pods = "/api/v1/namespaces/eth/pods";
      for (const [method, target, body, type] of [
        ["PATCH", path, { op: "replace" }, JSON_PATCH],
        ["PATCH", path, "{not json", JSON_PATCH],
        ["PATCH", path, "{not json", MERGE],
        ["PATCH", path, "[1,2]", MERGE],
        ["POST", pods, "{not json", "application/json"],
        ["POST", pods, "[]", "application/json"],
      ] as const) {
        const answer = await call(api, method, target, body, type);
        expect({ method, body, status: answer.status, kind: answer.body.kind }).toEqual({
          method,
          body,
          status: 400,
          kind: "Status",
        });
      }
      const after = await call(api, "GET", path);
      expect(after.status).toBe(200);
      expect(after.body.metadata?.labels).toEqual({ app: "x" });
    });

    it("refuses a patch that renames the object", async () => {
      const api = await server();
      api.put(PODS, pod("light-0"));
      const answer = await call(
        api,
        "PATCH",
        "/api/v1/namespaces/eth/pods/light-0",
        [{ op: "replace", path: "/metadata/name", value: "light-9" }],
        JSON_PATCH,
      );
      expect(answer.status).toBe(400);
      expect(api.get(PODS, "eth", "light-9")).toBeUndefined();
    });
  });

  describe("custom resources against their CRD schema", () => {
    it("prunes unknown fields of spec, status and the root, and applies defaults", async () => {
      const api = await server();
      const created = await call(
        api,
        "POST",
        POOL_PATH,
        newPool({
          extra: true,
          metadata: { name: "mainnet", namespace: "eth", madeUp: 1 },
          spec: {
            ...poolSpec(),
            unknownField: "x",
            health: { maxLagBlocks: 4, bogus: 1 },
            reservedPeers: [{ http: "http://full-0:8545", weight: 3 }],
            selector: { matchLabels: { app: "light" }, matchFields: { x: "y" } },
          },
        }),
      );
      expect(created.status).toBe(201);
      const stored = api.get(POOLS, "eth", "mainnet")!;
      expect(stored.extra).toBeUndefined();
      expect(stored.metadata.madeUp).toBeUndefined();
      expect(stored.spec).toEqual({
        ...poolSpec(),
        workloadRef: { apiVersion: "apps/v1", kind: "StatefulSet", name: "light" },
        rpcPort: 8545,
        health: { maxLagBlocks: 4 },
        reservedPeers: [{ http: "http://full-0:8545" }],
      });

      await call(
        api,
        "PATCH",
        `${POOL_PATH}/mainnet/status`,
        { status: { replicas: 2, stale: "yes", nodesByState: { Healthy: 2, Sleeping: 1 } } },
        MERGE,
      );
      expect(api.get(POOLS, "eth", "mainnet")?.status).toEqual({ replicas: 2, nodesByState: { Healthy: 2 } });
    });

    it("refuses what the schema refuses with 422, from clients and from the fixture alike", async () => {
      const api = await server();
      const bad = await call(
        api,
        "POST",
        POOL_PATH,
        newPool({ spec: { ...poolSpec(), reservedPeers: [{ http: "ftp://full-0" }], chainId: "one" } }),
      );
      expect(bad.status).toBe(422);
      expect(bad.body).toMatchObject({ kind: "Status", reason: "Invalid" });
      expect(bad.body.message).toContain("spec.reservedPeers[0].http");
      expect(bad.body.message).toContain("spec.chainId");
      expect(
        (await call(api, "POST", POOL_PATH, newPool({ spec: { network: "mainnet" } }))).body.message,
      ).toContain("spec.chainId: Required value");
      expect(api.get(POOLS, "eth", "mainnet")).toBeUndefined();

      expect((await call(api, "POST", POOL_PATH, newPool())).status).toBe(201);
      const update = await call(api, "PATCH", `${POOL_PATH}/mainnet`, { spec: { rpcPort: 70_000 } }, MERGE);
      expect(update.status).toBe(422);
      const status = await call(
        api,
        "PATCH",
        `${POOL_PATH}/mainnet/status`,
        { status: { nodesByState: { Healthy: -1 } } },
        MERGE,
      );
      expect(status.status).toBe(422);
      expect(api.get(POOLS, "eth", "mainnet")).toMatchObject({ spec: { rpcPort: 8545 } });
      expect(api.get(POOLS, "eth", "mainnet")?.status).toBeUndefined();

      expect(() => api.put(POOLS, { ...newPool(), spec: { network: "Not A Name" } } as KubeObject)).toThrow(
        /spec.network/,
      );
    });

    it("keeps unknown fields where the schema says x-kubernetes-preserve-unknown-fields", async () => {
      const api = await server({
        crds: [
          {
            group: "example.io",
            version: "v1",
            plural: "widgets",
            statusSubresource: false,
            schema: {
              type: "object",
              properties: {
                spec: {
                  type: "object",
                  properties: {
                    known: { type: "string" },
                    free: { type: "object", "x-kubernetes-preserve-unknown-fields": true },
                    labels: { type: "object", additionalProperties: { type: "string" } },
                    list: {
                      type: "array",
                      items: { type: "object", properties: { a: { type: "integer" } } },
                    },
                  },
                },
              },
            },
          },
        ],
      });
      const answer = await call(api, "POST", "/apis/example.io/v1/namespaces/eth/widgets", {
        apiVersion: "example.io/v1",
        kind: "Widget",
        metadata: { name: "w" },
        spec: {
          known: "k",
          gone: 1,
          free: { anything: { deep: [1] } },
          labels: { a: "b" },
          list: [{ a: 1, b: 2 }],
        },
      });
      expect(answer.status).toBe(201);
      expect(answer.body.spec).toEqual({
        known: "k",
        free: { anything: { deep: [1] } },
        labels: { a: "b" },
        list: [{ a: 1 }],
      });
      // A kind no CRD defines does not exist.
      const unknown = await call(api, "GET", "/apis/lightfleet.io/v1alpha1/namespaces/eth/lightnodes");
      expect(unknown.status).toBe(404);
    });
  });

  describe("eviction", () => {
    const evict = (api: FakeApiServer, name: string, deleteOptions?: unknown) =>
      call(api, "POST", `/api/v1/namespaces/eth/pods/${name}/eviction`, {
        apiVersion: "policy/v1",
        kind: "Eviction",
        metadata: { name, namespace: "eth" },
        ...(deleteOptions ? { deleteOptions } : {}),
      });
    const owned = (name: string, ready = true) =>
      pod(
        name,
        { app: "light" },
        {
          status: { phase: "Running", conditions: [{ type: "Ready", status: ready ? "True" : "False" }] },
        },
      );
    const withOwner = (o: KubeObject): KubeObject => ({
      ...o,
      metadata: {
        ...o.metadata,
        ownerReferences: [
          { apiVersion: "apps/v1", kind: "StatefulSet", name: "light", uid: "sts-uid", controller: true },
        ],
      },
    });
    const pdb = (spec: Record<string, unknown>, name = "light") => ({
      apiVersion: "policy/v1",
      kind: "PodDisruptionBudget",
      metadata: { name, namespace: "eth" },
      spec: { selector: { matchLabels: { app: "light" } }, ...spec },
    });

    it("honours a PodDisruptionBudget's maxUnavailable over the workload's replicas", async () => {
      const api = await server();
      api.setScale("statefulsets", "eth", "light", 3);
      api.put("apis/apps/v1/statefulsets", {
        apiVersion: "apps/v1",
        kind: "StatefulSet",
        metadata: { name: "light", namespace: "eth", uid: "sts-uid" },
        spec: { replicas: 3 },
      });
      for (const name of ["light-0", "light-1", "light-2"]) api.put(PODS, withOwner(owned(name)));
      api.put(PDBS, pdb({ maxUnavailable: 1 }));

      expect((await evict(api, "light-0")).status).toBe(201);
      expect(api.get(PODS, "eth", "light-0")).toBeUndefined();
      // light-0 is still missing from the 3 the StatefulSet wants: no further disruption is allowed.
      const refused = await evict(api, "light-1");
      expect(refused.status).toBe(429);
      expect(refused.body).toMatchObject({ kind: "Status", reason: "TooManyRequests", code: 429 });
      expect(api.get(PODS, "eth", "light-1")).toBeDefined();

      // Once it is back and ready, one may go again.
      api.put(PODS, withOwner(owned("light-0")));
      expect((await evict(api, "light-1")).status).toBe(201);
    });

    it("honours minAvailable (a count or a percentage) over ready pods, and unhealthyPodEvictionPolicy", async () => {
      const api = await server();
      api.put(PODS, owned("light-0"));
      api.put(PODS, owned("light-1"));
      api.put(PODS, owned("light-2", false));
      api.put(PDBS, pdb({ minAvailable: 2 }));
      // Two ready pods, two needed: neither may go.
      expect((await evict(api, "light-0")).status).toBe(429);
      // An unready pod does not count towards healthy: its eviction would not reduce what the budget counts, but the
      // budget is exactly met, so the default policy (IfHealthyBudget) lets it go.
      expect((await evict(api, "light-2")).status).toBe(201);

      api.put(PODS, owned("light-2", false));
      api.put(PDBS, pdb({ minAvailable: "100%" }));
      api.put(PODS, owned("light-1", false));
      // One ready of three, all three wanted: the unready pods stay under IfHealthyBudget...
      expect((await evict(api, "light-2")).status).toBe(429);
      // ...and go under AlwaysAllow.
      api.put(PDBS, pdb({ minAvailable: "100%", unhealthyPodEvictionPolicy: "AlwaysAllow" }));
      expect((await evict(api, "light-2")).status).toBe(201);
      expect((await evict(api, "light-0")).status).toBe(429);
    });

    it("refuses a pod under two budgets with 500, and evicts pods no budget selects", async () => {
      const api = await server();
      api.put(PODS, owned("light-0"));
      api.put(PODS, pod("other", { app: "other" }));
      api.put(PDBS, pdb({ maxUnavailable: 1 }, "a"));
      api.put(PDBS, pdb({ maxUnavailable: 1 }, "b"));
      expect((await evict(api, "light-0")).status).toBe(500);
      expect((await evict(api, "other")).status).toBe(201);
    });

    it("honours a UID precondition in DeleteOptions, on evictions and deletes", async () => {
      const api = await server();
      api.put(PODS, owned("light-0"));
      const uid = api.get(PODS, "eth", "light-0")!.metadata.uid;
      const stale = await evict(api, "light-0", { preconditions: { uid: "an-older-pod" } });
      expect(stale.status).toBe(409);
      expect(stale.body).toMatchObject({ reason: "Conflict" });
      expect(api.get(PODS, "eth", "light-0")).toBeDefined();
      expect((await evict(api, "light-0", { preconditions: { uid } })).status).toBe(201);

      api.put(PODS, owned("light-1"));
      const del = await call(api, "DELETE", "/api/v1/namespaces/eth/pods/light-1", {
        preconditions: { uid: "an-older-pod" },
      });
      expect(del.status).toBe(409);
      expect(api.get(PODS, "eth", "light-1")).toBeDefined();
      expect((await call(api, "DELETE", "/api/v1/namespaces/eth/pods/light-1")).status).toBe(200);
      expect(api.get(PODS, "eth", "light-1")).toBeUndefined();
    });
  });

  it("sends watch bookmarks to the watches that ask for them", async () => {
    const api = await server({ bookmarkIntervalMs: 50 });
    api.put(PODS, pod("light-0"));
    const watch = (bookmarks: boolean) =>
      fetch(
        `${api.url}/api/v1/namespaces/eth/pods?watch=true&resourceVersion=${api.resourceVersion()}${bookmarks ? "&allowWatchBookmarks=true" : ""}`,
      );
    const [withBookmarks, without] = await Promise.all([watch(true), watch(false)]);
    const marked = await readEvents(withBookmarks, (events) => events.some((e) => e.type === "BOOKMARK"));
    const bookmark = marked.find((e) => e.type === "BOOKMARK")!;
    expect(bookmark.object).toEqual({
      apiVersion: "v1",
      kind: "Pod",
      metadata: { resourceVersion: String(api.resourceVersion()) },
    });
    // The other watch gets the events, and never a bookmark, however long it stays open.
    await waitFor(() => api.bookmarksSent() >= 3, { what: "three bookmark rounds" });
    api.put(PODS, pod("light-1"));
    const plain = await readEvents(without, (events) => events.some((e) => e.type === "ADDED"));
    expect(plain.map((e) => e.type)).toEqual(["ADDED"]);
  });

  describe("owner references", () => {
    const lightNode = (name: string, owners: Array<{ name: string; uid: string }>) => ({
      apiVersion: "lightfleet.io/v1alpha1",
      kind: "LightNode",
      metadata: {
        name,
        namespace: "eth",
        ownerReferences: owners.map((o) => ({ apiVersion: "v1", kind: "Pod", name: o.name, uid: o.uid })),
      },
      spec: { pool: "mainnet", podName: name },
    });
    const createNode = (api: FakeApiServer, body: unknown) =>
      call(api, "POST", "/apis/lightfleet.io/v1alpha1/namespaces/eth/lightnodes", body);

    it("deleting an owner collects its dependents in the background", async () => {
      const api = await server();
      api.put(PODS, pod("light-0"));
      const uid = api.get(PODS, "eth", "light-0")!.metadata.uid!;
      expect((await createNode(api, lightNode("light-0", [{ name: "light-0", uid }]))).status).toBe(201);
      expect((await call(api, "DELETE", "/api/v1/namespaces/eth/pods/light-0")).status).toBe(200);
      await waitFor(() => api.get(NODES, "eth", "light-0") === undefined, {
        what: "the LightNode collected",
      });

      // Evicted pods and pods the fixture removes are owners like any other.
      api.put(PODS, pod("light-1"));
      const uid1 = api.get(PODS, "eth", "light-1")!.metadata.uid!;
      await createNode(api, lightNode("light-1", [{ name: "light-1", uid: uid1 }]));
      api.remove(PODS, "eth", "light-1");
      await waitFor(() => api.get(NODES, "eth", "light-1") === undefined, {
        what: "light-1's LightNode collected",
      });
    });

    it("collects a dependent whose owner is already gone, keeps one that still has an owner, and orphans on request", async () => {
      const api = await server();
      await createNode(api, lightNode("dangling", [{ name: "light-9", uid: "never-existed" }]));
      await waitFor(() => api.get(NODES, "eth", "dangling") === undefined, {
        what: "the dangling LightNode collected",
      });

      api.put(PODS, pod("a"));
      api.put(PODS, pod("b"));
      const [a, b] = ["a", "b"].map((n) => api.get(PODS, "eth", n)!.metadata.uid!);
      await createNode(
        api,
        lightNode("shared", [
          { name: "a", uid: a! },
          { name: "b", uid: b! },
        ]),
      );
      await call(api, "DELETE", "/api/v1/namespaces/eth/pods/a");
      await waitFor(
        () =>
          (api.get(NODES, "eth", "shared")?.metadata.ownerReferences as unknown[] | undefined)?.length === 1,
        { what: "the dead owner's reference removed" },
      );
      await call(api, "DELETE", "/api/v1/namespaces/eth/pods/b", { propagationPolicy: "Orphan" });
      await waitFor(() => api.get(NODES, "eth", "shared")?.metadata.ownerReferences === undefined, {
        what: "the orphaned LightNode without owners",
      });
      expect(api.get(NODES, "eth", "shared")).toBeDefined();
    });
  });
});

interface WatchEvent {
  type: string;
  object: KubeObject;
}

/** Reads a watch stream until `done` holds (bounded by the test's timeout), then closes it. */
async function readEvents(res: Response, done: (events: WatchEvent[]) => boolean): Promise<WatchEvent[]> {
  expect(res.status).toBe(200);
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  const events: WatchEvent[] = [];
  let buffer = "";
  while (!done(events)) {
    const { value, done: ended } = await reader.read();
    if (ended) break;
    buffer += decoder.decode(value, { stream: true });
    let newline: number;
    while ((newline = buffer.indexOf("\n")) >= 0) {
      events.push(JSON.parse(buffer.slice(0, newline)) as WatchEvent);
      buffer = buffer.slice(newline + 1);
    }
  }
  await reader.cancel();
  return events;
}
