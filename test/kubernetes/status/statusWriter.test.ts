import { KubeConfig } from "@kubernetes/client-node";
import type { ValidateFunction } from "ajv";
import nock from "nock";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { Fleet, FleetMember } from "../../../src/fleet/fleet.js";
import { EventRecorder } from "../../../src/kubernetes/status/eventRecorder.js";
import { StatusWriter } from "../../../src/kubernetes/status/statusWriter.js";
import type { PoolRef } from "../../../src/kubernetes/status/statusWriter.js";
import type { PoolScalingStatus } from "../../../src/scaling/poolScalingStatus.js";
import type { EngineOutput, NodeStatus } from "../../../src/health/types.js";
import { silentLogger } from "../../../src/log/logger.js";
import { crdValidators, loadCrds, validateObject } from "../../chart/validateObject.js";

const SERVER = "https://k8s.test:6443";
const BASE = "/apis/lightfleet.io/v1alpha1/namespaces/eth";
const T0 = Date.UTC(2026, 10, 22, 12);

type StatusWriterOptions = ConstructorParameters<typeof StatusWriter>[1];

const node = (name: string, state: NodeStatus["state"], extra: Partial<NodeStatus> = {}): NodeStatus => ({
  name,
  state,
  routed: state === "Healthy",
  head: 100,
  lagBlocks: 0,
  lagSeconds: 0,
  message: state === "Healthy" ? "in sync" : "5 blocks behind",
  since: T0 - 60_000,
  ...extra,
});

function output(nodes: NodeStatus[], extra: Partial<EngineOutput> = {}): EngineOutput {
  return {
    state: {} as EngineOutput["state"],
    reference: {
      number: 100,
      hash: "0x" + "ab".repeat(32),
      timestamp: Math.floor(T0 / 1000) - 1,
      seenAt: T0 - 1_000,
      peers: ["full-0", "full-1"],
    },
    nodes,
    decisions: [],
    ...extra,
  };
}

describe("status writing at the wire", () => {
  let kubeConfig: KubeConfig;
  let validators: Map<string, ValidateFunction>;
  let now = T0;
  const pool: PoolRef = {
    key: "mainnet",
    network: "mainnet",
    namespace: "eth",
    name: "mainnet",
    generation: 3,
  };
  const members: FleetMember[] = [
    {
      name: "light-0",
      network: "mainnet",
      httpUrl: "http://10.0.0.10:8545",
      startedAt: T0 - 3_600_000,
      routed: true,
      restarting: false,
      restarts: [],
    },
    {
      name: "light-1",
      network: "mainnet",
      httpUrl: "http://10.0.0.11:8545",
      startedAt: T0 - 600_000,
      routed: false,
      restarting: false,
      restarts: [{ at: T0 - 600_000, reason: "stall" }],
    },
  ];
  const fleet = {
    members: () => members,
    podsWithoutGate: () => [] as string[],
    podUid: (_network: string, pod: string) => `uid-${pod}`,
  } as unknown as Fleet & {
    podsWithoutGate(network: string): string[];
    podUid(network: string, pod: string): string | undefined;
  };

  beforeAll(async () => {
    kubeConfig = new KubeConfig();
    kubeConfig.loadFromOptions({
      clusters: [{ name: "test", server: SERVER, skipTLSVerify: true }],
      users: [{ name: "test", token: "t0ken" }],
      contexts: [{ name: "test", cluster: "test", user: "test" }],
      currentContext: "test",
    });
    nock.disableNetConnect();
    validators = crdValidators(await loadCrds());
  });
  afterEach(() => nock.cleanAll());
  afterAll(() => nock.enableNetConnect());

  /** A status writer of the mainnet pool and `fleet` on the test's clock; `options` add to or replace those. */
  const statusWriter = (options: Partial<StatusWriterOptions> = {}) =>
    new StatusWriter(kubeConfig, {
      pools: () => new Map([["mainnet", pool]]),
      fleet,
      logger: silentLogger(),
      clock: () => now,
      ...options,
    });

  /** A status writer whose Events (posted by controller-0) are recorded in `events`. */
  function writerWithEvents() {
    const events: Array<Record<string, unknown>> = [];
    nock(SERVER)
      .persist()
      .post("/apis/events.k8s.io/v1/namespaces/eth/events")
      .reply(201, (_path, body) => {
        events.push(body as Record<string, unknown>);
        return body as object;
      });
    const recorder = new EventRecorder(kubeConfig, {
      identity: "controller-0",
      logger: silentLogger(),
      clock: () => now,
    });
    const writer = statusWriter({ events: recorder });
    return { writer, events };
  }

  /** Records every write and checks it against the CRD's own schema, as the API server would. */
  function recordWrites() {
    const problems: string[] = [];
    const writes: Array<{
      method: string;
      path: string;
      body: { status?: unknown; kind?: string; metadata?: { name: string } };
    }> = [];
    const check = (kind: string, name: string, body: Record<string, unknown>) => {
      const object = {
        apiVersion: "lightfleet.io/v1alpha1",
        kind,
        metadata: { name },
        spec:
          kind === "LightNode"
            ? { pool: "mainnet", podName: name }
            : {
                network: "mainnet",
                chainId: 1,
                workloadRef: { kind: "StatefulSet", name: "x" },
                selector: {},
                reservedPeers: [{ http: "http://full-0:8545" }],
              },
        ...body,
      };
      problems.push(...validateObject(object as never, validators));
    };
    nock(SERVER)
      .persist()
      .post(`${BASE}/lightnodes`)
      .reply(201, (path, body) => {
        writes.push({ method: "POST", path, body: body as never });
        return body as object;
      })
      .patch(/\/apis\/lightfleet\.io\/v1alpha1\/namespaces\/eth\/(lightnodes|lightnodepools)\/[\w-]+\/status/)
      .matchHeader("content-type", "application/merge-patch+json")
      .reply(200, (path, raw) => {
        // A merge patch is not application/json, so it arrives as text.
        const body =
          typeof raw === "string"
            ? (JSON.parse(raw) as Record<string, unknown>)
            : (raw as Record<string, unknown>);
        writes.push({ method: "PATCH", path, body: body as never });
        const [, plural, name] = /\/(lightnodes|lightnodepools)\/([\w-]+)\/status/.exec(path)!;
        // Applied to an object as a merge patch: a null removes the field, so what is validated has none.
        check(plural === "lightnodes" ? "LightNode" : "LightNodePool", name!, withoutNulls(body));
        return {};
      });
    return Object.assign(writes, { problems });
  }

  it("creates no LightNode without an owner: a node whose pod is gone (uid unknown) gets none, so none outlives it", async () => {
    const writes = recordWrites();
    nock(SERVER)
      .patch(`${BASE}/lightnodes/light-1/status`)
      .reply(404, { kind: "Status", code: 404, reason: "NotFound" });
    const writer = statusWriter({
      fleet: {
        ...fleet,
        podUid: (_network: string, pod: string) => (pod === "light-1" ? undefined : `uid-${pod}`),
      },
    });
    await writer.onRound("mainnet", output([node("light-0", "Healthy"), node("light-1", "Restarting")]));
    const created = writes.filter((w) => w.method === "POST").map((w) => w.body.metadata?.name);
    expect(created).toEqual(["light-0"]);
  });

  it("clears what a status no longer says: an Unresponsive node's head and lag, a pool's rate once it is unavailable", async () => {
    const writes = recordWrites();
    let scaling: PoolScalingStatus | undefined = {
      desiredReplicas: 2,
      requestRate: 12.5,
      scalingReason: "steady",
      condition: { type: "ScalingActive", status: "True", reason: "Scaling", message: "steady" },
    };
    const writer = statusWriter({ scaling: () => scaling });
    now = T0;
    await writer.onRound("mainnet", output([node("light-0", "Healthy", { lagBlocks: 1 })]));
    now = T0 + 31_000;
    scaling = undefined;
    const hung = node("light-0", "Unresponsive");
    delete hung.head;
    delete hung.lagBlocks;
    delete hung.lagSeconds;
    await writer.onRound("mainnet", output([hung]));
    const nodeStatus = writes.filter((w) => w.path.endsWith("/lightnodes/light-0/status")).at(-1)!.body
      .status;
    expect(nodeStatus).toMatchObject({
      state: "Unresponsive",
      head: null,
      lagBlocks: null,
      lagSeconds: null,
    });
    const poolStatus = writes.filter((w) => w.path.endsWith("/lightnodepools/mainnet/status")).at(-1)!.body
      .status;
    expect(poolStatus).toMatchObject({ requestRate: null, desiredReplicas: null, scalingReason: null });
    expect(writes.problems).toEqual([]);
    now = T0;
  });

  it("creates each LightNode owned by its pod, writes statuses the CRD accepts, and the pool's status", async () => {
    const writes = recordWrites();
    const writer = statusWriter();
    await writer.onRound(
      "mainnet",
      output([node("light-0", "Healthy"), node("light-1", "Lagging", { lagBlocks: 5, reason: "lag" })]),
    );
    const created = writes.filter((w) => w.method === "POST").map((w) => w.body);
    expect(created).toEqual([
      expect.objectContaining({
        kind: "LightNode",
        metadata: expect.objectContaining({
          name: "light-0",
          ownerReferences: [
            { apiVersion: "v1", kind: "Pod", name: "light-0", uid: "uid-light-0", blockOwnerDeletion: false },
          ],
        }),
        spec: { pool: "mainnet", podName: "light-0" },
      }),
      expect.objectContaining({ metadata: expect.objectContaining({ name: "light-1" }) }),
    ]);
    const lagging = writes.find((w) => w.path.endsWith("/lightnodes/light-1/status"))!.body.status;
    expect(lagging).toEqual({
      network: "mainnet",
      state: "Lagging",
      reason: "lag",
      message: "5 blocks behind",
      routed: false,
      head: { number: 100 },
      lagBlocks: 5,
      lagSeconds: 0,
      restarts: 1,
      lastRestart: { time: "2026-11-22T11:50:00Z", reason: "stall" },
      restartHistory: [{ time: "2026-11-22T11:50:00Z", reason: "stall" }],
      lastTransitionTime: "2026-11-22T11:59:00Z",
      lastProbeTime: "2026-11-22T12:00:00Z",
      conditions: [
        {
          type: "Ready",
          status: "False",
          reason: "Lagging",
          message: "5 blocks behind",
          lastTransitionTime: "2026-11-22T11:59:00Z",
        },
      ],
    });
    const poolStatus = writes.find((w) => w.path.endsWith("/lightnodepools/mainnet/status"))!.body
      .status as Record<string, unknown>;
    expect(poolStatus).toMatchObject({
      observedGeneration: 3,
      replicas: 2,
      healthyReplicas: 1,
      healthySummary: "1/2",
      referenceHead: { number: 100, time: "2026-11-22T11:59:59Z" },
      nodesByState: { Healthy: 1, Lagging: 1, Starting: 0 },
    });
    expect(poolStatus.conditions).toEqual([
      expect.objectContaining({
        type: "Ready",
        status: "True",
        reason: "HealthyNodes",
        observedGeneration: 3,
      }),
      expect.objectContaining({ type: "Degraded", status: "True", reason: "NodesNotHealthy" }),
      expect.objectContaining({ type: "PeersReachable", status: "True" }),
    ]);
    expect(writes.problems).toEqual([]);
  });

  it("writes a LightNode's state change at once, its head and lag at most every 2 s, an unchanged node every 30 s", async () => {
    const writes = recordWrites();
    const writer = statusWriter();
    const nodePatches = () =>
      writes
        .filter((w) => w.method === "PATCH" && w.path.includes("/lightnodes/"))
        .map((w) => w.body.status as { state: string; head?: { number: number } });
    now = T0;
    await writer.onRound("mainnet", output([node("light-0", "Healthy")]));
    expect(nodePatches()).toHaveLength(1);
    // 20 rounds in 20 seconds (a block a second): the head is written every other second, not every block.
    for (let i = 1; i <= 20; i++) {
      now = T0 + i * 1_000;
      await writer.onRound("mainnet", output([node("light-0", "Healthy", { head: 100 + i })]));
    }
    expect(nodePatches().map((s) => s.head?.number)).toEqual([
      100, 102, 104, 106, 108, 110, 112, 114, 116, 118, 120,
    ]);
    // A state change 1 s after the last write goes out at once.
    now = T0 + 21_000;
    await writer.onRound("mainnet", output([node("light-0", "Lagging", { head: 120 })]));
    expect(nodePatches().at(-1)).toMatchObject({ state: "Lagging", head: { number: 120 } });
    // Nothing new: refreshed 30 s after the last write, not before.
    const count = nodePatches().length;
    now = T0 + 50_000;
    await writer.onRound("mainnet", output([node("light-0", "Lagging", { head: 120 })]));
    expect(nodePatches()).toHaveLength(count);
    now = T0 + 51_000;
    await writer.onRound("mainnet", output([node("light-0", "Lagging", { head: 120 })]));
    expect(nodePatches()).toHaveLength(count + 1);
    // Created once only.
    expect(writes.filter((w) => w.method === "POST")).toHaveLength(1);
    expect(writes.problems).toEqual([]);
  });

  it("writes the pool's reference head as it moves, at most every 2 s", async () => {
    const writes = recordWrites();
    const writer = statusWriter();
    const references = () =>
      writes
        .filter((w) => w.path.includes("/lightnodepools/"))
        .map((w) => (w.body.status as { referenceHead: { number: number } }).referenceHead.number);
    for (let i = 0; i <= 6; i++) {
      now = T0 + i * 1_000;
      const out = output([node("light-0", "Healthy", { head: 100 + i })]);
      await writer.onRound("mainnet", { ...out, reference: { ...out.reference!, number: 100 + i } });
    }
    expect(references()).toEqual([100, 102, 104, 106]);
    now = T0;
  });

  it("spreads the 30 s refreshes of many nodes over the interval, never refreshing one sooner than 30 s", async () => {
    const writes = recordWrites();
    const names = Array.from({ length: 20 }, (_, i) => `light-${i}`);
    const writer = statusWriter();
    const round = () => writer.onRound("mainnet", output(names.map((n) => node(n, "Healthy"))));
    now = T0;
    await round();
    const refreshedAt = new Map<string, number[]>();
    for (let t = 2_000; t <= 60_000; t += 2_000) {
      now = T0 + t;
      const before = writes.length;
      await round();
      for (const w of writes.slice(before)) {
        const name = /\/lightnodes\/([\w-]+)\/status/.exec(w.path)?.[1];
        if (name) refreshedAt.set(name, [...(refreshedAt.get(name) ?? []), t]);
      }
    }
    // Each node refreshed in the minute, first at least 30 s after its first write, then 30 s apart at least.
    expect([...refreshedAt.keys()].sort()).toEqual([...names].sort());
    for (const times of refreshedAt.values()) {
      expect(times[0]).toBeGreaterThanOrEqual(30_000);
      for (let i = 1; i < times.length; i++) expect(times[i]! - times[i - 1]!).toBeGreaterThanOrEqual(30_000);
    }
    expect(new Set([...refreshedAt.values()].map((t) => t[0])).size).toBeGreaterThanOrEqual(5);
  });

  it("reports pods without the readiness gate and a systemic failure in the pool conditions; transition times move only on flips; an unchanged pool is refreshed every 30 s", async () => {
    const writes = recordWrites();
    const gateless = { ...fleet, podsWithoutGate: () => ["manual-0"] } as typeof fleet;
    const writer = statusWriter({ fleet: gateless });
    /** The same round: one healthy node while no reserved peer answers. */
    const round = () =>
      writer.onRound(
        "mainnet",
        output([node("light-0", "Healthy")], {
          systemic: { cause: "no-peer-reachable", message: "no reserved peer answers" },
        }),
      );
    now = T0;
    await round();
    const poolWrites = () => writes.filter((w) => w.path.includes("/lightnodepools/"));
    // Nothing but the reference head changed: the pool's status is refreshed only after the 30 s interval.
    now = T0 + 5_000;
    await round();
    expect(poolWrites()).toHaveLength(1);
    now = T0 + 31_000;
    await round();
    expect(poolWrites()).toHaveLength(2);
    const pools = poolWrites().map(
      (w) => (w.body.status as { conditions: Array<Record<string, string>> }).conditions,
    );
    const degraded = pools.map((c) => c.find((x) => x.type === "Degraded")!);
    expect(degraded[1]).toMatchObject({
      status: "True",
      reason: "ReadinessGateMissing",
      message: expect.stringContaining("manual-0"),
    });
    expect(pools[1]!.find((x) => x.type === "PeersReachable")).toMatchObject({
      status: "False",
      reason: "NoPeerReachable",
    });
    expect(degraded[1]!.lastTransitionTime).toBe(degraded[0]!.lastTransitionTime);
    expect(writes.problems).toEqual([]);
  });

  it("rewrites the pool status for a new desired size at once, not for a new rate alone", async () => {
    const writes = recordWrites();
    let scaling = {
      desiredReplicas: 2,
      requestRate: 10.5,
      scalingReason: "10.5 req/s needs 2 at 5/node",
      condition: {
        type: "ScalingActive" as const,
        status: "True" as const,
        reason: "Scaling" as const,
        message: "10.5 req/s needs 2 at 5/node",
      },
    };
    const writer = statusWriter({ scaling: () => scaling });
    const poolWrites = () =>
      writes
        .filter((w) => w.path.includes("/lightnodepools/"))
        .map((w) => w.body.status as { desiredReplicas: number; requestRate: number });
    now = T0;
    await writer.onRound("mainnet", output([node("light-0", "Healthy")]));
    scaling = { ...scaling, requestRate: 11.2, scalingReason: "11.2 req/s needs 2 at 5/node" };
    now = T0 + 2_000;
    await writer.onRound("mainnet", output([node("light-0", "Healthy")]));
    expect(poolWrites()).toHaveLength(1);
    scaling = {
      ...scaling,
      desiredReplicas: 3,
      requestRate: 14.9,
      scalingReason: "14.9 req/s needs 3 at 5/node",
    };
    now = T0 + 4_000;
    await writer.onRound("mainnet", output([node("light-0", "Healthy")]));
    expect(poolWrites().map((w) => [w.desiredReplicas, w.requestRate])).toEqual([
      [2, 10.5],
      [3, 14.9],
    ]);
    expect(writes.problems).toEqual([]);
  });

  it("records no SystemicFailure Warning for a pool whose peers have not answered yet, and says it is pending", async () => {
    const writes = recordWrites();
    const { writer, events } = writerWithEvents();
    now = T0;
    const systemic = {
      cause: "no-peer-reachable" as const,
      message: "waiting for the first answer",
      pending: true,
    };
    await writer.onRound("mainnet", output([node("light-0", "Healthy")], { systemic }));
    expect(events.filter((e) => e.reason === "SystemicFailure")).toEqual([]);
    const status = writes.filter((w) => w.path.endsWith("/lightnodepools/mainnet/status")).at(-1)!.body
      .status as { conditions: Array<{ type: string; status: string; reason: string }> };
    expect(status.conditions.find((c) => c.type === "Degraded")).toMatchObject({
      status: "Unknown",
      reason: "PeersPending",
    });
    expect(status.conditions.find((c) => c.type === "PeersReachable")).toMatchObject({ status: "Unknown" });
    expect(writes.problems).toEqual([]);
  });

  it("records events.k8s.io/v1 Events on transitions and restarts, at most one per pod and reason a minute", async () => {
    recordWrites();
    const { writer, events } = writerWithEvents();
    const decisions: EngineOutput["decisions"] = [
      { kind: "transition", node: "light-1", from: "Healthy", to: "Lagging", message: "5 blocks behind" },
      { kind: "restart", node: "light-1", reason: "stall" },
    ];
    now = T0;
    await writer.onRound("mainnet", output([node("light-1", "Lagging")], { decisions }));
    now = T0 + 10_000;
    await writer.onRound("mainnet", output([node("light-1", "Lagging")], { decisions }));
    expect(events).toHaveLength(2);
    expect(events[0]).toMatchObject({
      apiVersion: "events.k8s.io/v1",
      kind: "Event",
      type: "Warning",
      reason: "Lagging",
      action: "Probe",
      note: "Healthy -> Lagging: 5 blocks behind",
      reportingController: "lightfleet.io/controller",
      reportingInstance: "controller-0",
      regarding: { kind: "Pod", apiVersion: "v1", namespace: "eth", name: "light-1", uid: "uid-light-1" },
    });
    expect(events[0]!.eventTime).toMatch(/^2026-11-22T12:00:00\.000000Z$/);
    expect(events[1]).toMatchObject({
      reason: "Restart",
      action: "Evict",
      note: "restarting the node (stall)",
    });
    now = T0 + 70_000;
    await writer.onRound("mainnet", output([node("light-1", "Lagging")], { decisions }));
    expect(events).toHaveLength(4);
  });

  it("a fail-static hold that ran out says so in the pool's Degraded condition and a Warning Event", async () => {
    const writes = recordWrites();
    const { writer, events } = writerWithEvents();
    now = T0;
    await writer.onRound(
      "mainnet",
      output([node("light-0", "Healthy")], {
        failStaticReleased: {
          cause: "no-peer-reachable",
          message: "no reserved peer answers",
          since: T0 - 300_000,
        },
      }),
    );
    const status = writes.filter((w) => w.path.includes("/lightnodepools/")).at(-1)!.body.status as {
      conditions: Array<Record<string, string>>;
    };
    expect(status.conditions.find((c) => c.type === "Degraded")).toMatchObject({
      status: "True",
      reason: "FailStaticReleased",
      message: expect.stringContaining("the hold ran out"),
    });
    expect(status.conditions.find((c) => c.type === "PeersReachable")).toMatchObject({ status: "False" });
    expect(events).toContainEqual(
      expect.objectContaining({
        type: "Warning",
        reason: "FailStaticReleased",
        regarding: expect.objectContaining({ kind: "LightNodePool", name: "mainnet" }),
      }),
    );
  });

  it("the schema check bites: a status the CRD refuses is reported", () => {
    const object = {
      apiVersion: "lightfleet.io/v1alpha1",
      kind: "LightNode",
      metadata: { name: "x" },
      spec: { pool: "p", podName: "x" },
      status: { state: "Sleeping" },
    };
    expect(validateObject(object as never, validators)).not.toEqual([]);
  });
});

/** A merge patch's body as it leaves an object that had none of its fields: nulls (removals) dropped, deeply. */
function withoutNulls(value: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(value)
      .filter(([, v]) => v !== null)
      .map(([k, v]) =>
        typeof v === "object" && !Array.isArray(v) ? [k, withoutNulls(v as Record<string, unknown>)] : [k, v],
      ),
  );
}
