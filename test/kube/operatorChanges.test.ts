import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { CHART_DIR } from "../support/helm.js";
import { LIGHTFLEET_IMAGE, realClusterUnavailable } from "../support/kube/realCluster.js";
import {
  QUICK_HEALTH,
  fullNodesAsReservedPeers,
  podCondition,
  realClusterForSuite,
  standInWorkload,
} from "../support/kube/realClusterSuite.js";
import { waitFor } from "../support/waitFor.js";

/**
 * What an SRE team does to a running release, on a real control plane: values upgrades that switch the autoscaling
 * mode, carry a value the components refuse or tune health only; a hand edit of a pool the controller refuses; a
 * deleted Lease. Each must fail safe (a bad value stops helm, a refused pool stays managed) and reach only what it
 * changes.
 */
const unavailable = await realClusterUnavailable();
if (unavailable) console.warn(`skipping the real Kubernetes tests: ${unavailable}`);

const NAMESPACE = "ops";
const RELEASE = "lf";
const NETWORK = { name: "alpha", chainId: 31_337, fullNodes: 2 };
const LEASE = `${RELEASE}-lightfleet-controller`;

describe.skipIf(unavailable !== undefined)("operator changes on a real Kubernetes control plane", () => {
  const { cluster, api, pods, lightPods, pool, lightNode, podOutputTail } = realClusterForSuite(NAMESPACE, {
    networks: [NETWORK],
    blockTimeMs: 1_000,
  });
  const statefulSetReplicas = async () =>
    (
      await api().apps.readNamespacedStatefulSet({
        name: `${RELEASE}-lightfleet-alpha`,
        namespace: NAMESPACE,
      })
    ).spec?.replicas;
  /** Every pod of the release by name, with its uid: a pod recreated has a new one. */
  const podUids = async () =>
    new Map(
      (await pods(`app.kubernetes.io/instance=${RELEASE}`))
        .filter((p) => !p.metadata?.labels?.["app.kubernetes.io/component"]?.startsWith("light-node"))
        .map((p) => [p.metadata!.name!, p.metadata!.uid!]),
    );
  const holder = async () => {
    try {
      return (await api().coordination.readNamespacedLease({ name: LEASE, namespace: NAMESPACE })).spec
        ?.holderIdentity;
    } catch {
      return undefined;
    }
  };

  const values = (change: { mode?: string; health?: Record<string, unknown> } = {}) => ({
    image: { repository: LIGHTFLEET_IMAGE, tag: "test" },
    autoscaling: { mode: change.mode ?? "off" },
    networks: [
      {
        name: NETWORK.name,
        chainId: NETWORK.chainId,
        blockTime: "1s",
        reservedPeers: fullNodesAsReservedPeers(cluster(), NETWORK.name),
        health: { ...QUICK_HEALTH, restartAfter: "1m", ...change.health },
        // Far more than the tests send: the controller, once it owns the size, keeps the floor of 2.
        scaling: { minReplicas: 2, maxReplicas: 4, targetRequestsPerNode: 100_000 },
        workload: standInWorkload({ http: 8547, ws: 8548 }),
      },
    ],
    controller: { replicas: 2 },
    gateway: { replicas: 1 },
    keys: { enabled: true, persistence: { enabled: false } },
  });
  /** `helm upgrade` with a whole values file, as a team's pipeline runs it. */
  const upgrade = async (next: unknown, flags: string[] = ["--server-side=true", "--force-conflicts"]) => {
    const file = join(cluster().plane.dir, `upgrade-${Date.now()}.yaml`);
    await writeFile(file, stringify(next));
    return cluster().helm(
      ["upgrade", RELEASE, CHART_DIR, "--namespace", NAMESPACE, "--values", file, ...flags],
      120_000,
    );
  };
  const allHealthy = () =>
    waitFor(
      async () => {
        const list = await lightPods(NETWORK.name);
        if (list.length !== 2) return false;
        const states = await Promise.all(
          list.map((p) => lightNode(p.metadata!.name!).then((n) => n.status?.state)),
        );
        return states.every((s) => s === "Healthy") && list.every((p) => podCondition(p, "Ready") === "True");
      },
      { timeoutMs: 120_000, intervalMs: 500, what: `both light nodes Healthy and Ready${podOutputTail()}` },
    );
  /** Waits until every Deployment of the release has rolled out: no pod of an older template left. */
  const rolledOut = () =>
    waitFor(
      async () => {
        const deployments = (await api().apps.listNamespacedDeployment({ namespace: NAMESPACE })).items;
        const done = deployments.every((d) => {
          const want = d.spec?.replicas ?? 1;
          const st = d.status ?? {};
          return (
            st.observedGeneration === d.metadata?.generation &&
            st.updatedReplicas === want &&
            st.replicas === want &&
            st.readyReplicas === want
          );
        });
        if (!done) return false;
        const want = deployments.reduce((n, d) => n + (d.spec?.replicas ?? 1), 0);
        return (await podUids()).size === want;
      },
      { timeoutMs: 120_000, intervalMs: 500, what: `every Deployment rolled out${podOutputTail()}` },
    );
  /** Lags a light node and waits until its readiness gate is False; returns how long that took. */
  const lagUnrouted = async (timeoutMs: number, heal = true) => {
    const [victim] = (await lightPods(NETWORK.name)).sort((a, b) =>
      a.metadata!.name!.localeCompare(b.metadata!.name!),
    );
    const name = victim!.metadata!.name!;
    const started = Date.now();
    await cluster().devnet.fault(name, { kind: "lag", blocks: 6 });
    await waitFor(
      async () => {
        const [pod] = (await lightPods(NETWORK.name)).filter((p) => p.metadata!.name === name);
        return pod !== undefined && podCondition(pod, "lightfleet.io/in-sync") === "False";
      },
      { timeoutMs, intervalMs: 200, what: `${name} out of routing${podOutputTail()}` },
    );
    const took = Date.now() - started;
    if (heal) await cluster().devnet.fault(name, { kind: "heal" });
    return { name, took };
  };

  it("switching autoscaling.mode from controller to off and back keeps the running size", async () => {
    const installed = await cluster().install(RELEASE, NAMESPACE, values({ mode: "controller" }));
    expect(installed.code, installed.stderr).toBe(0);
    // The controller sizes the pool to its floor of 2.
    await allHealthy();
    expect(await statefulSetReplicas()).toBe(2);
    // Client-side three-way merges, as Helm 3 upgrades (and Helm 4 a release Helm 3 installed): a field the old
    // manifest had and the new one lacks is deleted, and the API server defaults replicas to 1.
    const clientSide = ["--server-side=false"];
    const off = await upgrade(values({ mode: "off" }), clientSide);
    expect(off.code, off.stderr).toBe(0);
    expect(await statefulSetReplicas()).toBe(2);

    const switched = await upgrade(values({ mode: "controller" }), clientSide);
    expect(switched.code, switched.stderr).toBe(0);
    // Right after the upgrade, before any controller round: dropping the field would have reset it to 1.
    expect(await statefulSetReplicas()).toBe(2);
    expect((await lightPods(NETWORK.name)).length).toBe(2);
    await allHealthy();
  }, 300_000);

  it("kubectl get ln and lnp follow the chain: HEAD and REFERENCE a few blocks behind it at most, not 30 s", async () => {
    await allHealthy();
    const [full] = cluster()
      .devnet.nodes(NETWORK.name)
      .filter((p) => p.role === "full");
    const chainHead = async () => {
      const answer = await fetch(full!.httpUrl, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_blockNumber", params: [] }),
      });
      return Number(((await answer.json()) as { result: string }).result);
    };
    /** A printer column by its header, per row name, from `kubectl get KIND` as an SRE reads it. */
    const columns = async (kind: string, column: string) => {
      const got = await cluster().kubectl(["get", kind, "--namespace", NAMESPACE]);
      expect(got.code, got.stderr).toBe(0);
      const [header, ...rows] = got.stdout
        .trim()
        .split("\n")
        .map((line) => line.trim().split(/\s+/));
      const at = header!.indexOf(column);
      return new Map(rows.map((row) => [row[0]!, Number(row[at])]));
    };
    // Status writes of progress alone are bounded (one per node every few seconds): at 1 s blocks a column may trail
    // the chain by that interval plus a probe and the write, never by the old 30 s refresh.
    const trailing = 5;
    const start = await chainHead();
    const behind: string[] = [];
    let samples = 0;
    await waitFor(
      async () => {
        const head = await chainHead();
        for (const [name, value] of [
          ...(await columns("ln", "HEAD")),
          ...(await columns("lnp", "REFERENCE")),
        ])
          if (!(value >= head - trailing)) behind.push(`${name} at ${value} with the chain at ${head}`);
        samples++;
        return head >= start + 12;
      },
      { timeoutMs: 60_000, intervalMs: 250, what: "the chain 12 blocks on" },
    );
    console.info(
      `printer columns: ${samples} samples over 12 blocks, ${behind.length} behind by more than ${trailing}`,
    );
    expect(behind).toEqual([]);
  }, 120_000);

  it("an upgrade with a value the components refuse fails in helm, before any pod changes", async () => {
    await rolledOut();
    const before = await podUids();
    const revision = (await cluster().helm(["history", RELEASE, "--namespace", NAMESPACE, "-o", "json"]))
      .stdout;
    const refused = await upgrade(values({ mode: "controller", health: { maxLagSeconds: "500ms" } }));
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/maxLagSeconds/);
    expect((await cluster().helm(["history", RELEASE, "--namespace", NAMESPACE, "-o", "json"])).stdout).toBe(
      revision,
    );
    expect(await podUids()).toEqual(before);
  }, 120_000);

  it("a health-only upgrade restarts neither the key API nor the controller: the leader stays", async () => {
    await rolledOut();
    const leader = await holder();
    expect(leader).toBeDefined();
    const before = await podUids();
    const generations = async () =>
      Object.fromEntries(
        (await api().apps.listNamespacedDeployment({ namespace: NAMESPACE })).items.map((d) => [
          d.metadata!.labels!["app.kubernetes.io/component"]!,
          d.metadata!.generation!,
        ]),
      );
    const templatesBefore = await generations();
    const tuned = await upgrade(values({ mode: "controller", health: { maxLagBlocks: 4 } }));
    expect(tuned.code, tuned.stderr).toBe(0);
    // A new pod template is a new generation: only the gateway's (it reads the networks) changes.
    const templatesAfter = await generations();
    expect(templatesAfter["keys-api"]).toBe(templatesBefore["keys-api"]);
    expect(templatesAfter.controller).toBe(templatesBefore.controller);
    expect(templatesAfter.gateway).toBe(templatesBefore.gateway! + 1);
    // The change reaches the controller through the pool.
    await waitFor(
      async () => {
        const p = await pool(NETWORK.name);
        return p.spec.health?.maxLagBlocks === 4 && p.status?.observedGeneration === p.metadata.generation;
      },
      { timeoutMs: 30_000, what: "the pool's new spec observed" },
    );
    const keysAndControllers = (uids: Map<string, string>) =>
      [...uids].filter(([name]) => /-keys-|-controller-/.test(name)).sort();
    expect(keysAndControllers(await podUids())).toEqual(keysAndControllers(before));
    expect(await holder()).toBe(leader);
  }, 120_000);

  it("a pool edited by hand into a spec the controller refuses stays managed: a lagging node leaves routing", async () => {
    await allHealthy();
    // A selector every list of pods would fail on (In with no values): the CRD lets it through, the controller
    // refuses it.
    const patched = await cluster().kubectl([
      "patch",
      "lightnodepool",
      "alpha",
      "--namespace",
      NAMESPACE,
      "--type",
      "merge",
      "-p",
      JSON.stringify({
        spec: {
          selector: {
            matchExpressions: [{ key: "app.kubernetes.io/component", operator: "In", values: [] }],
          },
        },
      }),
    ]);
    expect(patched.code, patched.stderr).toBe(0);
    const refused = await waitFor(
      async () => {
        const p = await pool(NETWORK.name);
        const c = p.status?.conditions?.find((x) => x.type === "SpecAccepted");
        return c?.status === "False" && c.observedGeneration === p.metadata.generation ? c : undefined;
      },
      { timeoutMs: 30_000, what: `SpecAccepted=False${podOutputTail()}` },
    );
    expect(refused.message).toMatch(/spec\.selector\.matchExpressions\[0\]\.values/);
    // One block (1 s) for the lag to show, two probes (500 ms) to judge it, and a round: well within 10 s.
    const { name, took } = await lagUnrouted(10_000, false);
    console.info(`refused pool: ${name} out of routing ${took} ms after its lag began`);
    expect(took).toBeLessThan(10_000);
    // Its LightNode and the pool's HEALTHY column follow (status writes go out beside the rounds).
    const node = await waitFor(
      async () => {
        const n = await lightNode(name);
        return n.status?.state !== "Healthy" ? n : undefined;
      },
      { timeoutMs: 10_000, intervalMs: 250, what: `${name}'s LightNode no longer Healthy` },
    );
    expect(Date.now() - Date.parse(node.status!.lastProbeTime!)).toBeLessThan(40_000);
    await waitFor(async () => (await pool(NETWORK.name)).status?.healthySummary === "1/2", {
      timeoutMs: 10_000,
      intervalMs: 250,
      what: "the pool's HEALTHY column at 1/2",
    });
    await cluster().devnet.fault(name, { kind: "heal" });
    // Put back as it was: the spec is accepted again.
    const restored = await cluster().kubectl([
      "patch",
      "lightnodepool",
      "alpha",
      "--namespace",
      NAMESPACE,
      "--type",
      "merge",
      "-p",
      JSON.stringify({ spec: { selector: { matchExpressions: null } } }),
    ]);
    expect(restored.code, restored.stderr).toBe(0);
    await waitFor(
      async () =>
        (await pool(NETWORK.name)).status?.conditions?.find((x) => x.type === "SpecAccepted")?.status ===
        "True",
      { timeoutMs: 30_000, what: "SpecAccepted=True again" },
    );
    // The refusal's Event names the pool by its uid, so `kubectl describe` lists it; only the leader recorded it,
    // once (both replicas resolve the pools). Counted seconds after it was made, so a second replica's would be in.
    const described = await cluster().kubectl([
      "describe",
      "lightnodepool",
      "alpha",
      "--namespace",
      NAMESPACE,
    ]);
    expect(described.stdout).toMatch(
      /Warning\s+InvalidSpec\s.*spec\.selector\.matchExpressions\[0\]\.values/,
    );
    const refusals = await api().core.listNamespacedEvent({
      namespace: NAMESPACE,
      fieldSelector: "reason=InvalidSpec,involvedObject.name=alpha",
    });
    expect(refusals.items.map((e) => e.reportingInstance ?? e.source?.component)).toHaveLength(1);
  }, 120_000);

  it("a deleted Lease is created again by a controller, which then acts on a lag within the Lease duration", async () => {
    await allHealthy();
    await api().coordination.deleteNamespacedLease({ name: LEASE, namespace: NAMESPACE });
    const deletedAt = Date.now();
    await waitFor(async () => (await holder()) !== undefined, {
      timeoutMs: 30_000,
      intervalMs: 250,
      what: `the Lease created again${podOutputTail()}`,
    });
    // The chart's Lease duration is 15 s.
    expect(Date.now() - deletedAt).toBeLessThan(15_000);
    console.info(`deleted Lease: created again ${Date.now() - deletedAt} ms later`);
    const { took } = await lagUnrouted(15_000);
    console.info(`deleted Lease: a lagging node out of routing ${took} ms after its lag began`);
    expect(took).toBeLessThan(15_000);
    const events = await cluster().plane.auditEvents();
    const refused = events.filter(
      (e) =>
        e.user.username.startsWith(`system:serviceaccount:${NAMESPACE}:`) && e.responseStatus?.code === 403,
    );
    expect(refused.map((e) => `${e.user.username} ${e.verb} ${e.requestURI}`)).toEqual([]);
  }, 120_000);

  it("records no SystemicFailure through all of the above: leader starts, pool edits, a new leader after the Lease", async () => {
    // The reserved peers answered throughout; a Warning at a leader's start or a pool edit would be false.
    const systemic = await api().core.listNamespacedEvent({
      namespace: NAMESPACE,
      fieldSelector: "reason=SystemicFailure",
    });
    expect(systemic.items.map((e) => `${String(e.eventTime ?? e.firstTimestamp)} ${e.message}`)).toEqual([]);
  }, 30_000);
});
