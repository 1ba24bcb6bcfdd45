import { CoordinationV1Api, KubeConfig } from "@kubernetes/client-node";
import nock from "nock";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { decideLease, observe, stillLeading } from "../../../src/kubernetes/leaderElection/leaseDecision.js";
import { LeaderElector } from "../../../src/kubernetes/leaderElection/leaderElector.js";
import { silentLogger } from "../../../src/log/logger.js";
import { createLeaderMetrics } from "../../../src/metrics/leaderMetrics.js";
import { Registry } from "prom-client";
import { startFakeLeaseServer } from "../../support/fakeLeaseServer.js";
import { waitFor } from "../../support/waitFor.js";

describe("lease decisions (injected clock)", () => {
  const record = { holderIdentity: "other", renewTime: "t1", leaseDurationSeconds: 15 };

  it("takes a lease nobody holds, and renews its own", () => {
    expect(decideLease(observe(undefined, {}, 0), "me", 0, 15_000)).toEqual({ kind: "acquire" });
    expect(decideLease(observe(undefined, { ...record, holderIdentity: "me" }, 0), "me", 0, 15_000)).toEqual({
      kind: "acquire",
    });
  });

  it("follows a live lease and takes it over once the holder has not renewed for the lease duration", () => {
    const seen = observe(undefined, record, 1_000);
    expect(decideLease(seen, "me", 15_999, 15_000)).toEqual({
      kind: "follow",
      holder: "other",
      expiresAt: 16_000,
    });
    expect(decideLease(seen, "me", 16_000, 15_000)).toEqual({ kind: "acquire" });
  });

  it("judges expiry from when the record last changed here, not from the holder's clock", () => {
    const first = observe(undefined, record, 1_000);
    expect(observe(first, { ...record }, 9_000)).toBe(first); // unchanged record keeps its first sighting
    const renewed = observe(first, { ...record, renewTime: "t2" }, 9_000);
    expect(decideLease(renewed, "me", 16_000, 15_000).kind).toBe("follow");
  });

  it("a leader acts only while its last renewal is younger than the renew deadline", () => {
    expect(stillLeading(1_000, 10_999, 10_000)).toBe(true);
    expect(stillLeading(1_000, 11_000, 10_000)).toBe(false);
    expect(stillLeading(undefined, 0, 10_000)).toBe(false);
  });
});

describe("leader election at the wire", () => {
  const server = "https://k8s.test:6443";
  let kubeConfig: KubeConfig;
  const electors: LeaderElector[] = [];

  beforeAll(() => {
    kubeConfig = new KubeConfig();
    kubeConfig.loadFromOptions({
      clusters: [{ name: "test", server, skipTLSVerify: true }],
      users: [{ name: "test", token: "t0ken" }],
      contexts: [{ name: "test", cluster: "test", user: "test", namespace: "fleet" }],
      currentContext: "test",
    });
  });

  afterEach(async () => {
    await Promise.all(electors.splice(0).map((e) => e.stop()));
    nock.cleanAll();
  });

  afterAll(() => nock.restore());

  it("creates the Lease with microsecond times when none exists, then leads", async () => {
    let created: Record<string, unknown> | undefined;
    const api = nock(server)
      .get("/apis/coordination.k8s.io/v1/namespaces/fleet/leases/lightfleet-controller")
      .reply(404, { kind: "Status", code: 404, reason: "NotFound" })
      .post("/apis/coordination.k8s.io/v1/namespaces/fleet/leases", (body: Record<string, unknown>) => {
        created = body;
        return true;
      })
      .matchHeader("content-type", /application\/json/)
      .reply(201, (_uri, body) => ({
        ...(body as object),
        metadata: { name: "lightfleet-controller", resourceVersion: "1" },
      }));
    const elector = new LeaderElector({
      api: kubeConfig.makeApiClient(CoordinationV1Api),
      namespace: "fleet",
      name: "lightfleet-controller",
      identity: "controller-0",
      retryPeriodMs: 60_000,
      logger: silentLogger(),
    });
    electors.push(elector);
    elector.start();
    await waitFor(() => elector.isLeader(), { what: "leadership" });
    expect(api.isDone()).toBe(true);
    const spec = created?.spec as Record<string, unknown>;
    expect(spec).toMatchObject({
      holderIdentity: "controller-0",
      leaseDurationSeconds: 15,
      leaseTransitions: 0,
    });
    expect(spec.renewTime).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    expect(spec.acquireTime).toMatch(/\.\d{6}Z$/);
  });
});

describe("two controllers on one Lease", () => {
  let fake: Awaited<ReturnType<typeof startFakeLeaseServer>>;
  const electors: LeaderElector[] = [];
  // Leases hold whole seconds, so the duration is one.
  const timing = { leaseDurationMs: 1_000, renewDeadlineMs: 700, retryPeriodMs: 100 };

  beforeAll(async () => {
    nock.enableNetConnect("127.0.0.1");
    fake = await startFakeLeaseServer();
  });
  afterEach(async () => {
    await Promise.all(electors.splice(0).map((e) => e.stop()));
  });
  afterAll(async () => {
    await fake.close();
  });

  /** An elector whose API calls can be cut, as a network partition or a frozen process would. */
  function elector(identity: string, lease: string) {
    const real = fake.kubeConfig().makeApiClient(CoordinationV1Api);
    const link = { cut: false };
    const api = new Proxy(real, {
      get(target, property, receiver) {
        const value = Reflect.get(target, property, receiver) as unknown;
        if (typeof value !== "function") return value;
        return (...args: unknown[]) =>
          link.cut
            ? Promise.reject(new Error("connection refused"))
            : (value as (...a: unknown[]) => unknown).apply(target, args);
      },
    });
    const registry = new Registry();
    const e = new LeaderElector({
      api,
      namespace: "fleet",
      name: lease,
      identity,
      ...timing,
      logger: silentLogger(),
      metrics: createLeaderMetrics(registry),
    });
    electors.push(e);
    const gauge = async () =>
      (await registry.getSingleMetric("lightfleet_controller_leader")!.get()).values[0]?.value;
    return { elector: e, link, gauge };
  }

  it("exactly one acts at a time; a follower takes over within the lease duration when the leader is cut off", async () => {
    const a = elector("a", "handover");
    const b = elector("b", "handover");
    a.elector.start();
    await waitFor(() => a.elector.isLeader(), { what: "a leading" });
    b.elector.start();

    // Both campaign for a while: never two leaders, and the leader keeps its lease.
    const until = Date.now() + 600;
    while (Date.now() < until) {
      expect(a.elector.isLeader() && b.elector.isLeader()).toBe(false);
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(a.elector.isLeader()).toBe(true);
    expect(fake.lease("fleet", "handover")?.spec.holderIdentity).toBe("a");

    a.link.cut = true;
    const cutAt = Date.now();
    let aStoppedAt = 0;
    let bStartedAt = 0;
    await waitFor(
      () => {
        const aLeads = a.elector.isLeader();
        const bLeads = b.elector.isLeader();
        expect(aLeads && bLeads).toBe(false);
        if (!aLeads && !aStoppedAt) aStoppedAt = Date.now();
        if (bLeads && !bStartedAt) bStartedAt = Date.now();
        return bLeads;
      },
      { timeoutMs: 10_000, intervalMs: 10, what: "b taking over" },
    );
    // The cut-off leader stopped acting within its renew deadline, before the follower took over.
    expect(aStoppedAt - cutAt).toBeLessThanOrEqual(timing.renewDeadlineMs + 2 * timing.retryPeriodMs);
    expect(bStartedAt).toBeGreaterThanOrEqual(aStoppedAt);
    expect(bStartedAt - cutAt).toBeLessThanOrEqual(timing.leaseDurationMs + 5 * timing.retryPeriodMs);
    expect(fake.lease("fleet", "handover")?.spec).toMatchObject({ holderIdentity: "b", leaseTransitions: 1 });
    expect(await b.gauge()).toBe(1);
    expect(await a.gauge()).toBe(0);
  });

  it("a leader that stops releases the lease, so the follower takes over without waiting for expiry", async () => {
    const a = elector("a", "release");
    const b = elector("b", "release");
    a.elector.start();
    await waitFor(() => a.elector.isLeader(), { what: "a leading" });
    b.elector.start();
    const stoppedAt = Date.now();
    await a.elector.stop();
    expect(a.elector.isLeader()).toBe(false);
    await waitFor(() => b.elector.isLeader(), { timeoutMs: 5_000, what: "b taking over" });
    expect(Date.now() - stoppedAt).toBeLessThan(timing.leaseDurationMs);
  });
});

describe("the Lease of a release", () => {
  it("keeps the labels of the Lease the chart made when it takes and renews it, and labels a Lease it creates", async () => {
    nock.enableNetConnect("127.0.0.1");
    const fake = await startFakeLeaseServer();
    const labels = { "app.kubernetes.io/instance": "rel", "app.kubernetes.io/component": "controller" };
    const electors: LeaderElector[] = [];
    try {
      fake.seed({ metadata: { name: "rel-lightfleet-controller", namespace: "fleet", labels } });
      const make = (name: string, extra: Record<string, string> = {}) => {
        const e = new LeaderElector({
          api: fake.kubeConfig().makeApiClient(CoordinationV1Api),
          namespace: "fleet",
          name,
          identity: "controller-0",
          labels: extra,
          leaseDurationMs: 1_000,
          renewDeadlineMs: 700,
          retryPeriodMs: 50,
          logger: silentLogger(),
        });
        electors.push(e);
        e.start();
        return e;
      };
      const taking = make("rel-lightfleet-controller", { "lightfleet.io/added": "yes" });
      await waitFor(() => taking.isLeader(), { what: "leadership of the chart's Lease" });
      const before = fake.writes();
      await waitFor(() => fake.writes() >= before + 2, { what: "two renewals" });
      expect(fake.lease("fleet", "rel-lightfleet-controller")?.spec.holderIdentity).toBe("controller-0");
      expect(fake.lease("fleet", "rel-lightfleet-controller")?.metadata.labels).toEqual({
        ...labels,
        "lightfleet.io/added": "yes",
      });

      const creating = make("own-lease", labels);
      await waitFor(() => creating.isLeader(), { what: "leadership of a new Lease" });
      expect(fake.lease("fleet", "own-lease")?.metadata.labels).toEqual(labels);
    } finally {
      await Promise.all(electors.map((e) => e.stop()));
      await fake.close();
    }
  });
});
