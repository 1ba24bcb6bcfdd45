import { KubeConfig } from "@kubernetes/client-node";
import nock from "nock";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { KubernetesFleet } from "../../../src/kubernetes/pods/kubernetesFleet.js";
import type { PoolBinding } from "../../../src/kubernetes/pods/podRules.js";
import { readinessPatch } from "../../../src/kubernetes/pods/podRules.js";
import { silentLogger } from "../../../src/log/logger.js";
import { waitFor } from "../../support/waitFor.js";

const SERVER = "https://k8s.test:6443";
const PODS = "/api/v1/namespaces/eth/pods";
const pool: PoolBinding = {
  key: "mainnet",
  network: "mainnet",
  namespace: "eth",
  labelSelector: "app=light,network=mainnet",
  rpcPort: 8545,
  wsPort: 8546,
  workload: { kind: "StatefulSet", name: "light-mainnet" },
};

function pod(
  name: string,
  ip: string,
  options: { inSync?: "True" | "False"; gate?: boolean; resourceVersion?: string; restart?: string } = {},
) {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name,
      namespace: "eth",
      uid: `uid-${name}`,
      resourceVersion: options.resourceVersion ?? "1",
      ...(options.restart ? { annotations: { "lightfleet.io/restart": options.restart } } : {}),
    },
    spec: {
      containers: [{ name: "node", image: "light" }],
      ...(options.gate === false ? {} : { readinessGates: [{ conditionType: "lightfleet.io/in-sync" }] }),
    },
    status: {
      podIP: ip,
      startTime: "2026-11-22T10:00:00Z",
      containerStatuses: [
        {
          name: "node",
          ready: true,
          restartCount: 0,
          image: "light",
          imageID: "",
          state: { running: { startedAt: "2026-11-22T10:00:05Z" } },
        },
      ],
      conditions: options.inSync
        ? [
            {
              type: "lightfleet.io/in-sync",
              status: options.inSync,
              lastTransitionTime: "2026-11-22T10:01:00Z",
            },
          ]
        : [],
    },
  };
}

const event = (type: string, object: unknown) => `${JSON.stringify({ type, object })}\n`;

describe("Kubernetes fleet backend at the wire", () => {
  let kubeConfig: KubeConfig;
  const fleets: KubernetesFleet[] = [];

  beforeAll(() => {
    kubeConfig = new KubeConfig();
    kubeConfig.loadFromOptions({
      clusters: [{ name: "test", server: SERVER, skipTLSVerify: true }],
      users: [{ name: "test", token: "t0ken" }],
      contexts: [{ name: "test", cluster: "test", user: "test", namespace: "eth" }],
      currentContext: "test",
    });
    nock.disableNetConnect();
  });
  afterEach(() => {
    for (const fleet of fleets.splice(0)) fleet.stop();
    nock.abortPendingRequests();
    nock.cleanAll();
  });
  afterAll(() => nock.enableNetConnect());

  function start(clock = () => Date.UTC(2026, 10, 22, 12), pools = [pool]): KubernetesFleet {
    const fleet = new KubernetesFleet({ kubeConfig, pools, logger: silentLogger(), clock });
    fleets.push(fleet);
    fleet.start();
    return fleet;
  }

  /** A list, then a watch that stays open (until the test stops the fleet). */
  function listThenHold(items: unknown[], resourceVersion = "100") {
    return nock(SERVER)
      .matchHeader("authorization", "Bearer t0ken")
      .get(PODS)
      .query({ labelSelector: pool.labelSelector })
      .reply(200, { apiVersion: "v1", kind: "PodList", metadata: { resourceVersion }, items })
      .get(PODS)
      .query({
        labelSelector: pool.labelSelector,
        watch: "true",
        resourceVersion,
        allowWatchBookmarks: "true",
      })
      .delay(60_000)
      .reply(200, "");
  }

  it("lists the pool's pods as members: gated pods only, URLs from the pod IP, routing from the in-sync condition", async () => {
    listThenHold([
      pod("light-0", "10.0.0.10", { inSync: "True" }),
      pod("light-1", "10.0.0.11"),
      pod("other", "10.0.0.12", { gate: false }),
    ]);
    const fleet = start();
    await waitFor(() => fleet.members("mainnet").length === 2, { what: "two members" });
    expect(fleet.members("mainnet")).toEqual([
      {
        name: "light-0",
        network: "mainnet",
        httpUrl: "http://10.0.0.10:8545",
        wsUrl: "ws://10.0.0.10:8546",
        startedAt: Date.parse("2026-11-22T10:00:05Z"),
        routed: true,
        restarting: false,
        restarts: [],
      },
      expect.objectContaining({ name: "light-1", routed: false }),
    ]);
    expect(fleet.podsWithoutGate("mainnet")).toEqual(["other"]);
    expect(fleet.oldestSync()).toBeDefined();
  });

  it("patches the readiness condition on pods/status as a strategic merge, only when it changes", async () => {
    listThenHold([
      pod("light-0", "10.0.0.10", { inSync: "True" }),
      pod("light-1", "10.0.0.11", { inSync: "True" }),
    ]);
    let patch: unknown;
    const api = nock(SERVER)
      .patch(`${PODS}/light-1/status`, (body: unknown) => {
        patch = body;
        return true;
      })
      .matchHeader("content-type", "application/strategic-merge-patch+json")
      .reply(200, pod("light-1", "10.0.0.11", { inSync: "False" }));
    const fleet = start();
    await waitFor(() => fleet.members("mainnet").length === 2);
    await fleet.setRouted("mainnet", "light-0", true); // already True: no call
    await fleet.setRouted("mainnet", "light-1", false);
    expect(api.isDone()).toBe(true);
    expect(patch).toEqual({
      status: {
        conditions: [
          {
            type: "lightfleet.io/in-sync",
            status: "False",
            lastTransitionTime: "2026-11-22T12:00:00Z",
            reason: "OutOfSync",
            message: expect.stringContaining("not in sync"),
          },
        ],
      },
    });
  });

  it("keeps a newer watched pod over the older one a slow status write returns (an operator's restart is not lost)", async () => {
    const base = { labelSelector: pool.labelSelector, allowWatchBookmarks: "true", watch: "true" };
    // The status write lands first (101), then an operator annotates the pod (102), and the watch says so while the
    // write's answer (the pod as of 101) is still on its way.
    let written: () => void = () => {};
    const writeLanded = new Promise<void>((resolve) => (written = resolve));
    let answer: () => void = () => {};
    const answered = new Promise<void>((resolve) => (answer = resolve));
    nock(SERVER)
      .get(PODS)
      .query({ labelSelector: pool.labelSelector })
      .reply(200, {
        metadata: { resourceVersion: "100" },
        items: [pod("light-0", "10.0.0.10", { inSync: "True", resourceVersion: "100" })],
      })
      .get(PODS)
      .query({ ...base, resourceVersion: "100" })
      .reply(200, async () => {
        await writeLanded;
        return event(
          "MODIFIED",
          pod("light-0", "10.0.0.10", {
            inSync: "False",
            resourceVersion: "102",
            restart: "2026-11-22T12:00:00Z",
          }),
        );
      })
      .get(PODS)
      .query({ ...base, resourceVersion: "102" })
      .delay(60_000)
      .reply(200, "")
      .patch(`${PODS}/light-0/status`)
      .reply(200, async () => {
        written();
        await answered;
        return pod("light-0", "10.0.0.10", { inSync: "False", resourceVersion: "101" });
      });
    const fleet = start();
    await waitFor(() => fleet.members("mainnet").length === 1, { what: "the listed pod" });
    const writing = fleet.setRouted("mainnet", "light-0", false);
    await waitFor(() => fleet.members("mainnet")[0]?.restartRequested === true, {
      what: "the annotated pod from the watch",
    });
    answer();
    await writing;
    expect(nock.isDone()).toBe(true);
    expect(fleet.members("mainnet")[0]).toMatchObject({ restartRequested: true, routed: false });
  });

  it("restarts through the Eviction API: created is restarted, 429 (a PodDisruptionBudget) is deferred, 404 is gone", async () => {
    listThenHold([pod("light-0", "10.0.0.10"), pod("light-1", "10.0.0.11"), pod("light-2", "10.0.0.12")]);
    let eviction: unknown;
    nock(SERVER)
      .post(`${PODS}/light-0/eviction`, (body: unknown) => {
        eviction = body;
        return true;
      })
      .reply(201, { kind: "Status", status: "Success" })
      .post(`${PODS}/light-1/eviction`)
      .reply(429, {
        kind: "Status",
        status: "Failure",
        reason: "TooManyRequests",
        code: 429,
        message: "Cannot evict pod as it would violate the pod's disruption budget.",
      })
      .post(`${PODS}/light-2/eviction`)
      .reply(404, { kind: "Status", status: "Failure", reason: "NotFound", code: 404 });
    const fleet = start();
    await waitFor(() => fleet.members("mainnet").length === 3);
    expect(await fleet.restart("mainnet", "light-0", "stall")).toEqual({ outcome: "restarted" });
    expect(eviction).toEqual({
      apiVersion: "policy/v1",
      kind: "Eviction",
      metadata: { name: "light-0", namespace: "eth" },
      deleteOptions: { preconditions: { uid: "uid-light-0" } },
    });
    expect(fleet.members("mainnet")[0]!.restarts).toEqual([
      { at: Date.UTC(2026, 10, 22, 12), reason: "stall" },
    ]);
    expect(await fleet.restart("mainnet", "light-1", "lag")).toMatchObject({ outcome: "deferred" });
    expect(await fleet.restart("mainnet", "light-2", "lag")).toEqual({ outcome: "gone" });
    expect(await fleet.restart("mainnet", "nope", "lag")).toEqual({ outcome: "gone" });
  });

  it("reads the workload's size from its scale subresource at most every 15 s, and knows a size it set", async () => {
    listThenHold([]);
    const reads = nock(SERVER)
      .get("/apis/apps/v1/namespaces/eth/statefulsets/light-mainnet/scale")
      .times(2)
      .reply(200, {
        apiVersion: "autoscaling/v1",
        kind: "Scale",
        spec: { replicas: 2 },
        status: { replicas: 1 },
      });
    nock(SERVER)
      .patch("/apis/apps/v1/namespaces/eth/statefulsets/light-mainnet/scale")
      .reply(200, { apiVersion: "autoscaling/v1", kind: "Scale", spec: { replicas: 4 } });
    let now = Date.UTC(2026, 10, 22, 12);
    const fleet = start(() => now);
    // The size asked of the workload (2), not the pods seen (none yet).
    expect(await fleet.replicas("mainnet")).toBe(2);
    now += 10_000;
    expect(await fleet.replicas("mainnet")).toBe(2);
    expect(reads.pendingMocks()).toHaveLength(1); // one read so far
    await fleet.scale("mainnet", 4);
    expect(await fleet.replicas("mainnet")).toBe(4);
    now += 15_000;
    expect(await fleet.replicas("mainnet")).toBe(2); // read again: someone else set it back
    expect(reads.isDone()).toBe(true);
  });

  it("scales through the workload's scale subresource with a merge patch", async () => {
    listThenHold([]);
    const api = nock(SERVER)
      .patch("/apis/apps/v1/namespaces/eth/statefulsets/light-mainnet/scale", { spec: { replicas: 5 } })
      .matchHeader("content-type", "application/merge-patch+json")
      .reply(200, { apiVersion: "autoscaling/v1", kind: "Scale", spec: { replicas: 5 } });
    const fleet = start();
    await fleet.scale("mainnet", 5);
    expect(api.isDone()).toBe(true);
  });

  it("follows the watch, resumes a dropped watch from its resource version, and relists on 410 Gone", async () => {
    const base = { labelSelector: pool.labelSelector, allowWatchBookmarks: "true", watch: "true" };
    nock(SERVER)
      .get(PODS)
      .query({ labelSelector: pool.labelSelector })
      .reply(200, { metadata: { resourceVersion: "100" }, items: [pod("light-0", "10.0.0.10")] })
      // First watch: light-0 turns in sync, light-1 appears, then the connection drops.
      .get(PODS)
      .query({ ...base, resourceVersion: "100" })
      .reply(
        200,
        event("MODIFIED", pod("light-0", "10.0.0.10", { inSync: "True", resourceVersion: "101" })) +
          event("ADDED", pod("light-1", "10.0.0.11", { resourceVersion: "102" })),
      )
      // Resumed from 102: the history is gone.
      .get(PODS)
      .query({ ...base, resourceVersion: "102" })
      .reply(200, event("ERROR", { kind: "Status", code: 410, reason: "Expired" }))
      // Relist: light-0 was deleted meanwhile.
      .get(PODS)
      .query({ labelSelector: pool.labelSelector })
      .reply(200, {
        metadata: { resourceVersion: "200" },
        items: [pod("light-1", "10.0.0.11", { resourceVersion: "150" })],
      })
      .get(PODS)
      .query({ ...base, resourceVersion: "200" })
      .delay(60_000)
      .reply(200, "");
    const fleet = start();
    const changes: string[] = [];
    fleet.onChange((network) => changes.push(network));
    const names = () =>
      fleet
        .members("mainnet")
        .map((m) => m.name)
        .join();
    await waitFor(
      // Every interceptor used (the last is the held watch from the relisted version) and light-0 gone.
      () => nock.isDone() && names() === "light-1",
      { what: "the relist after 410 Gone" },
    );
    expect(changes.length).toBeGreaterThanOrEqual(3);
  });

  it("reads restart history back from the LightNodes, so budgets and backoff survive a controller restart", async () => {
    nock(SERVER)
      .get("/apis/lightfleet.io/v1alpha1/namespaces/eth/lightnodes")
      .query({ labelSelector: "lightfleet.io/network=mainnet" })
      .reply(200, {
        items: [
          {
            metadata: { name: "light-0" },
            status: {
              restartHistory: [
                { time: "2026-11-22T11:00:00Z", reason: "stall" },
                { time: "2026-11-22T11:30:00Z", reason: "bogus" },
                { time: "2026-11-22T11:40:00Z", reason: "lag" },
              ],
            },
          },
          { metadata: { name: "light-1" }, status: {} },
        ],
      });
    listThenHold([pod("light-0", "10.0.0.10"), pod("light-1", "10.0.0.11")]);
    const fleet = start(Date.now, []);
    // A pool taken up reads its history back before its pods are listed.
    await fleet.setPools([pool]);
    await waitFor(() => fleet.members("mainnet").length === 2);
    expect(fleet.members("mainnet").map((m) => m.restarts)).toEqual([
      [
        { at: Date.parse("2026-11-22T11:00:00Z"), reason: "stall" },
        { at: Date.parse("2026-11-22T11:40:00Z"), reason: "lag" },
      ],
      [],
    ]);
  });

  it("computes no patch when the condition already says so", () => {
    const now = Date.UTC(2026, 10, 22, 12);
    expect(readinessPatch(pod("a", "10.0.0.1", { inSync: "True" }) as never, true, now)).toBeUndefined();
    expect(readinessPatch(pod("a", "10.0.0.1") as never, false, now)).toBeDefined();
  });
});
