import { afterEach, describe, expect, it } from "vitest";
import {
  devnetPodsOnFakeApi,
  EVENTS,
  NODES,
  podInSync as inSync,
  POOLS,
  startControllerOnFakeApi,
  type Cleanup,
} from "../../support/controllerOnFakeApi.js";
import { devnetPool, POOL_HEALTH } from "../../support/devnet.js";
import type { FakeApiServer, KubeObject } from "../../support/fakeApiServer.js";
import { waitFor } from "../../support/waitFor.js";

const cleanup: Cleanup = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

const cluster = (lights: number) => devnetPodsOnFakeApi(lights, cleanup);
const start = (api: FakeApiServer, identity = "controller-0") =>
  startControllerOnFakeApi(api, cleanup, { identity });

type Status = {
  observedGeneration?: number;
  healthySummary?: string;
  referenceHead?: { number: number };
  acceptedGeneration?: number;
  conditions?: Array<{
    type: string;
    status: string;
    reason: string;
    message: string;
    observedGeneration?: number;
  }>;
};
const poolStatus = (api: FakeApiServer) => (api.get(POOLS, "eth", "devnet")?.status ?? {}) as Status;
const condition = (api: FakeApiServer, type: string) =>
  poolStatus(api).conditions?.find((c) => c.type === type);
const lightNode = (api: FakeApiServer, pod: string) =>
  api.get(NODES, "eth", pod)?.status as { state?: string; lastProbeTime?: string } | undefined;
const refusals = (api: FakeApiServer) =>
  api
    .list(EVENTS)
    .filter((e) => (e.regarding as { name?: string }).name === "devnet" && e.reason === "InvalidSpec");

/** The devnet pool as an operator edits it: the same object, a new spec. */
function edit(api: FakeApiServer, spec: Record<string, unknown>) {
  const current = api.get(POOLS, "eth", "devnet")!;
  api.put(POOLS, { ...current, spec: { ...(current.spec as object), ...spec } } as KubeObject);
}

describe("a pool whose new spec the controller refuses", () => {
  it("keeps being managed with its last accepted spec: a lag is unrouted, statuses stay live, the refusal is a condition and one Event", async () => {
    const { devnet, api, port } = await cluster(2);
    api.put(POOLS, devnetPool(devnet, port) as unknown as KubeObject);
    const first = start(api);
    await first.running.ready;
    await waitFor(() => inSync(api, "light-0") === "True" && inSync(api, "light-1") === "True", {
      timeoutMs: 20_000,
      what: "both pods routed",
    });
    await waitFor(() => poolStatus(api).acceptedGeneration === 1, { what: "generation 1 accepted" });

    // A value the components refuse (under the one-second resolution of block timestamps), as an older CRD that
    // does not know the rule lets through.
    edit(api, { health: { ...POOL_HEALTH, maxLagSeconds: "500ms" } });
    await waitFor(() => condition(api, "SpecAccepted")?.status === "False", {
      what: "SpecAccepted=False on the pool",
    });
    const refused = condition(api, "SpecAccepted")!;
    expect(refused.reason).toBe("InvalidSpec");
    expect(refused.message).toMatch(/spec\.health\.maxLagSeconds: is 500ms/);
    expect(refused.message).toMatch(/generation 1/);
    expect(refused.observedGeneration).toBe(2);
    await waitFor(() => refusals(api).length > 0, { what: "an InvalidSpec Event" });
    expect(refusals(api)[0]!.note).toMatch(/spec\.health\.maxLagSeconds/);
    expect(first.running.pools().map((p) => p.ref.name)).toEqual(["devnet"]);

    // The refused pool is still managed: a lagging node leaves routing, its LightNode and the pool's columns move.
    const probedBefore = lightNode(api, "light-1")?.lastProbeTime;
    await devnet.fault("light-1", { kind: "lag", blocks: 6 });
    await waitFor(() => inSync(api, "light-1") === "False", { timeoutMs: 20_000, what: "light-1 unrouted" });
    await waitFor(() => lightNode(api, "light-1")?.state === "Lagging", {
      what: "light-1's LightNode Lagging",
    });
    expect(lightNode(api, "light-1")?.lastProbeTime).not.toBe(probedBefore);
    await waitFor(() => poolStatus(api).healthySummary === "1/2", { what: "HEALTHY column 1/2" });
    expect(poolStatus(api).referenceHead?.number).toBeGreaterThan(0);
    expect(condition(api, "Ready")?.status).toBe("True");
    expect(condition(api, "SpecAccepted")?.status).toBe("False");

    // A controller that starts now (a rollout, a new leader) finds the last accepted spec in the pool's status and
    // manages the pool with it; the refusal it finds recorded is not recorded again.
    await first.stop();
    await devnet.fault("light-1", { kind: "heal" });
    const second = start(api, "controller-1");
    await second.running.ready;
    await waitFor(() => inSync(api, "light-1") === "True", {
      timeoutMs: 30_000,
      what: "light-1 routed again",
    });
    expect(second.running.pools().map((p) => p.ref.name)).toEqual(["devnet"]);
    expect(refusals(api)).toHaveLength(1);

    // A valid spec is taken up at once, and the condition says so.
    edit(api, { health: { ...POOL_HEALTH, maxLagSeconds: "2s" } });
    await waitFor(() => condition(api, "SpecAccepted")?.status === "True", { what: "SpecAccepted=True" });
    await waitFor(() => poolStatus(api).acceptedGeneration === 3, { what: "generation 3 accepted" });
  });

  it("with no accepted spec, runs nothing: its pods are never routed, and it says so", async () => {
    const { devnet, api, port } = await cluster(1);
    const pool = devnetPool(devnet, port, { spec: { health: { ...POOL_HEALTH, maxLagSeconds: "500ms" } } });
    api.put(POOLS, pool as unknown as KubeObject);
    const { running } = start(api);
    await running.ready;
    await waitFor(() => condition(api, "SpecAccepted")?.status === "False", { what: "SpecAccepted=False" });
    expect(condition(api, "SpecAccepted")!.message).toMatch(/no accepted spec/);
    expect(condition(api, "Ready")).toMatchObject({ status: "False", reason: "InvalidSpec" });
    expect(running.pools()).toEqual([]);
    expect(inSync(api, "light-0")).toBeUndefined();
  });
});
