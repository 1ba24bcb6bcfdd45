import { afterEach, describe, expect, it } from "vitest";
import { KubernetesFleet } from "../../../src/kubernetes/pods/kubernetesFleet.js";
import type { PoolBinding } from "../../../src/kubernetes/pods/podRules.js";
import { silentLogger } from "../../../src/log/logger.js";
import { startFakeApiServer, type KubeObject } from "../../support/fakeApiServer.js";
import { waitFor } from "../../support/waitFor.js";

const PODS = "api/v1/pods";
const NODES = "apis/lightfleet.io/v1alpha1/lightnodes";
const cleanup: Array<() => unknown> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

const binding = (namespace: string): PoolBinding => ({
  key: `${namespace}/mainnet`,
  network: "mainnet",
  namespace,
  labelSelector: "app=light",
  rpcPort: 8545,
  workload: { kind: "StatefulSet", name: "light" },
});

const pod = (namespace: string, ip: string): KubeObject => ({
  apiVersion: "v1",
  kind: "Pod",
  metadata: { name: "light-0", namespace, labels: { app: "light" } },
  spec: { containers: [{ name: "node" }], readinessGates: [{ conditionType: "lightfleet.io/in-sync" }] },
  status: { podIP: ip, startTime: "2026-11-22T10:00:00Z", conditions: [] },
});

describe("KubernetesFleet with one network in two namespaces", () => {
  it("keeps each namespace's pods, and their restart history, apart though the pods share a name", async () => {
    const api = await startFakeApiServer();
    cleanup.push(() => api.close());
    api.put(PODS, pod("eth", "10.0.0.1"));
    api.put(PODS, pod("staging", "10.0.0.2"));
    // staging's light-0 was restarted by an earlier controller; eth's never was.
    const lightNode = {
      apiVersion: "lightfleet.io/v1alpha1",
      kind: "LightNode",
      metadata: { name: "light-0", namespace: "staging", labels: { "lightfleet.io/network": "mainnet" } },
      spec: { pool: "mainnet", podName: "light-0" },
    } as unknown as KubeObject;
    api.put(NODES, lightNode);
    api.put(NODES, {
      ...api.get(NODES, "staging", "light-0")!,
      status: { network: "mainnet", restartHistory: [{ time: "2026-11-22T09:00:00Z", reason: "lag" }] },
    } as KubeObject);

    const fleet = new KubernetesFleet({ kubeConfig: api.kubeConfig(), pools: [], logger: silentLogger() });
    fleet.start();
    cleanup.push(() => fleet.stop());
    await fleet.setPools([binding("eth"), binding("staging")]);
    await waitFor(
      () => fleet.members("eth/mainnet").length === 1 && fleet.members("staging/mainnet").length === 1,
      { what: "each pool's pod" },
    );
    expect(fleet.members("eth/mainnet")[0]).toMatchObject({ httpUrl: "http://10.0.0.1:8545", restarts: [] });
    expect(fleet.members("staging/mainnet")[0]).toMatchObject({
      httpUrl: "http://10.0.0.2:8545",
      restarts: [{ at: Date.parse("2026-11-22T09:00:00Z"), reason: "lag" }],
    });

    // A restart of eth's light-0 is eth's alone.
    expect(await fleet.restart("eth/mainnet", "light-0", "stall")).toEqual({ outcome: "restarted" });
    expect(fleet.members("eth/mainnet")[0]?.restarts.map((r) => r.reason)).toEqual(["stall"]);
    expect(fleet.members("staging/mainnet")[0]?.restarts.map((r) => r.reason)).toEqual(["lag"]);
    expect(
      api.calls
        .filter((c) => c.method === "POST" && c.path.endsWith("/pods/light-0/eviction"))
        .map((c) => c.path),
    ).toEqual(["/api/v1/namespaces/eth/pods/light-0/eviction"]);
  });
});
