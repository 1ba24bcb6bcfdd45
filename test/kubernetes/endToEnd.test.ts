import { KubeConfig } from "@kubernetes/client-node";
import nock from "nock";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { Controller } from "../../src/controller/controller.js";
import { KubernetesFleet } from "../../src/kubernetes/pods/kubernetesFleet.js";
import { poolNetwork } from "../../src/kubernetes/controller/poolNetworks.js";
import { StatusWriter } from "../../src/kubernetes/status/statusWriter.js";
import { silentLogger } from "../../src/log/logger.js";
import { devnetPool, podNodeObject, POOL_HEALTH, startPodNodes, startTestDevnet } from "../support/devnet.js";
import { waitFor } from "../support/waitFor.js";

const SERVER = "https://k8s.test:6443";
const PODS = "/api/v1/namespaces/eth/pods";

describe("controller end to end: API simulated at the wire, real nodes", () => {
  const cleanup: Array<() => unknown> = [];
  beforeAll(() => nock.enableNetConnect((host) => host.startsWith("127.0.0.")));
  afterEach(async () => {
    for (const fn of cleanup.splice(0).reverse()) await fn();
    nock.abortPendingRequests();
    nock.cleanAll();
  });
  afterAll(() => nock.enableNetConnect());

  it("routes through the readiness gate, evicts a stalled node within the budget, and reports a forked node as Diverged", async () => {
    const devnet = await startTestDevnet({ networks: [{ name: "devnet", chainId: 31_337, fullNodes: 2 }] });
    const { port } = await startPodNodes(devnet, 3);
    const pool = devnetPool(devnet, port, {
      spec: {
        // Blocks come when the test mines them, each a second later than the last by its timestamp: lag in seconds is
        // judged against a 1 s block time, and a stall is two of them.
        blockTime: "1s",
        health: { ...POOL_HEALTH, stallAfter: "2s", restartAfter: "1s", maxConcurrentRestarts: 1 },
      },
    });
    const { network, binding, ref } = poolNetwork(pool);
    expect(binding.labelSelector).toBe("app=light");

    const readiness: Array<{ pod: string; status: string }> = [];
    const evictions: string[] = [];
    const lightNodes = new Map<string, Record<string, unknown>>();
    nock(SERVER)
      .get(PODS)
      .query({ labelSelector: "app=light" })
      .reply(200, { metadata: { resourceVersion: "10" }, items: [0, 1, 2].map(podNodeObject) })
      .get(PODS)
      .query(true)
      .delay(120_000)
      .reply(200, "");
    nock(SERVER)
      .persist()
      .patch(/\/api\/v1\/namespaces\/eth\/pods\/light-\d\/status/)
      .reply(200, (path, body) => {
        const b = (typeof body === "string" ? JSON.parse(body) : body) as {
          status: { conditions: Array<{ status: string }> };
        };
        const pod = /light-(\d)/.exec(path)!;
        readiness.push({ pod: pod[0], status: b.status.conditions[0]!.status });
        // The API server answers with the patched pod.
        const updated = podNodeObject(Number(pod[1]));
        return { ...updated, status: { ...updated.status, conditions: b.status.conditions } };
      })
      .post(/\/api\/v1\/namespaces\/eth\/pods\/light-\d\/eviction/)
      .reply(201, (path) => {
        evictions.push(/light-\d/.exec(path)![0]);
        return { kind: "Status", status: "Success" };
      })
      .post("/apis/lightfleet.io/v1alpha1/namespaces/eth/lightnodes")
      .reply(201, (_path, body) => body as object)
      .patch(/\/apis\/lightfleet\.io\/v1alpha1\/namespaces\/eth\/lightnodes\/light-\d\/status/)
      .reply(200, (path, body) => {
        const b = (typeof body === "string" ? JSON.parse(body) : body) as { status: Record<string, unknown> };
        lightNodes.set(/light-\d/.exec(path)![0], b.status);
        return {};
      })
      .patch("/apis/lightfleet.io/v1alpha1/namespaces/eth/lightnodepools/devnet/status")
      .reply(200, {});

    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromOptions({
      clusters: [{ name: "test", server: SERVER, skipTLSVerify: true }],
      users: [{ name: "test", token: "t0ken" }],
      contexts: [{ name: "test", cluster: "test", user: "test" }],
      currentContext: "test",
    });
    const fleet = new KubernetesFleet({ kubeConfig, pools: [binding], logger: silentLogger() });
    const writer = new StatusWriter(kubeConfig, {
      pools: () => new Map([[ref.key, ref]]),
      fleet,
      logger: silentLogger(),
      throttle: { refreshIntervalMs: 1_000 },
    });
    const controller = new Controller({
      // Named by the pool key (eth/devnet), as the cluster controller names its networks. The pool's 1 s block time
      // (its blocks' timestamps), not the test's 300 ms mining pace: a node silent for a block plus a probe leaves
      // routing at once, and 500 ms of silence is within what a loaded 2-core machine holds a process back.
      networks: [{ ...network, name: ref.key }],
      fleet,
      logger: silentLogger(),
      onRound: (n, o) => writer.onRound(n, o),
    });
    fleet.start();
    controller.start();
    cleanup.push(() => fleet.stop());
    cleanup.push(() => controller.stop());
    let mined = 0;
    const miner = setInterval(
      () =>
        void devnet
          .mine("devnet")
          .then(() => mined++)
          .catch(() => {}),
      300,
    );
    cleanup.push(() => clearInterval(miner));

    const lastReadiness = (pod: string) => readiness.filter((r) => r.pod === pod).at(-1)?.status;
    await waitFor(() => [0, 1, 2].every((i) => lastReadiness(`light-${i}`) === "True"), {
      timeoutMs: 20_000,
      what: "all three pods routed",
    });
    // Routing is patched only on change: one True per pod so far, and none changes while the chain moves on (the
    // pod the API server answers a write with is the pod it listed, not a new incarnation of it).
    expect(readiness.filter((r) => r.status === "True")).toHaveLength(3);
    const routedPatches = readiness.length;
    const minedBefore = mined;
    await waitFor(() => mined >= minedBefore + 5, { what: "five more blocks" });
    expect(readiness.slice(routedPatches)).toEqual([]);
    await devnet.fault("light-0", { kind: "lag", blocks: 5 });
    await waitFor(() => lastReadiness("light-0") === "False", {
      timeoutMs: 20_000,
      what: "light-0 unrouted",
    });
    // The LightNode follows once the round's decisions are carried out.
    await waitFor(
      () => lightNodes.get("light-0")?.state === "Lagging" && lightNodes.get("light-0")?.routed === false,
      {
        what: "light-0's LightNode Lagging and unrouted",
      },
    );

    await devnet.fault("light-1", { kind: "stall" });
    await waitFor(() => evictions.includes("light-1"), { timeoutMs: 20_000, what: "light-1 evicted" });

    await devnet.fault("light-2", { kind: "fork" });
    await waitFor(() => lightNodes.get("light-2")?.state === "Diverged", {
      timeoutMs: 20_000,
      what: "light-2 Diverged",
    });

    // A small lag only unroutes: light-0 is never evicted; only the stalled and the forked node may be.
    expect(evictions.filter((p) => p === "light-0")).toEqual([]);
    expect(new Set(evictions).size).toBeLessThanOrEqual(2);
  });
});
