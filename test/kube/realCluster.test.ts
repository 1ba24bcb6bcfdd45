import { appendFileSync } from "node:fs";
import { PatchStrategy, setHeaderOptions, type V1ObjectMeta } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { parseObjects } from "../support/helm.js";
import { LIGHTFLEET_IMAGE, realClusterUnavailable } from "../support/kube/realCluster.js";
import {
  QUICK_HEALTH,
  fullNodesAsReservedPeers,
  lightfleetResources,
  podCondition,
  realClusterForSuite,
  standInWorkload,
} from "../support/kube/realClusterSuite.js";
import { waitFor } from "../support/waitFor.js";

/**
 * The chart, the controller and the gateway on a real control plane: kube-apiserver with RBAC, etcd, and
 * kube-controller-manager's StatefulSet, Deployment, EndpointSlice, disruption and garbage-collector controllers.
 * A kubelet stand-in runs the pods: light nodes as anvils on a pod network, the chart's controller and gateway pods
 * as processes with their service accounts' tokens.
 */
const unavailable = await realClusterUnavailable();
if (unavailable) console.warn(`skipping the real Kubernetes tests: ${unavailable}`);

const NAMESPACE = "rpc";
const RELEASE = "lf";
const NETWORKS = [
  { name: "alpha", chainId: 31_337, fullNodes: 2 },
  { name: "beta", chainId: 31_338, fullNodes: 2 },
];
const GROUP = lightfleetResources(NAMESPACE);

describe.skipIf(unavailable !== undefined)("on a real Kubernetes control plane", () => {
  // LIGHTFLEET_KUBE_LOG=FILE keeps every line of the stand-in kubelet and the pods (timestamped) for a post-mortem.
  const logFile = process.env.LIGHTFLEET_KUBE_LOG;
  const { cluster, api, pods, lightPods, pool, lightNode, podOutputTail } = realClusterForSuite(NAMESPACE, {
    networks: NETWORKS,
    blockTimeMs: 1_000,
    log: logFile ? (line) => appendFileSync(logFile, `${new Date().toISOString()} ${line}\n`) : undefined,
  });

  const values = () => ({
    image: { repository: LIGHTFLEET_IMAGE, tag: "test" },
    config: { log: { level: "info" } },
    networks: NETWORKS.map((n, i) => ({
      name: n.name,
      chainId: n.chainId,
      blockTime: "1s",
      reservedPeers: fullNodesAsReservedPeers(cluster(), n.name),
      health: { ...QUICK_HEALTH, restartAfter: "3s" },
      scaling: { minReplicas: 2, maxReplicas: 4, targetRequestsPerNode: 1000 },
      gateway: { default: i === 0 },
      // Not the default ports: the pool must carry them to the controller's probes. beta's client serves WebSocket on
      // its HTTP port, which must be listed once (the API refuses a port listed twice).
      workload: standInWorkload(i === 0 ? { http: 8547, ws: 8548 } : { http: 8547, ws: 8547 }),
    })),
    controller: { replicas: 2 },
    gateway: { replicas: 1 },
    // The key API on SQLite in an emptyDir; its pepper and seed key from the Secret the chart generates once.
    keys: { enabled: true, persistence: { enabled: false } },
  });

  it("installs with helm: CRDs accepted, every object created", async () => {
    const installed = await cluster().install(RELEASE, NAMESPACE, values());
    expect(installed.stderr + installed.stdout).not.toMatch(/error/i);
    expect(installed.code).toBe(0);

    const manifest = await cluster().helm(["get", "manifest", RELEASE, "--namespace", NAMESPACE]);
    const objects = parseObjects(manifest.stdout);
    expect(objects.length).toBeGreaterThan(10);
    const missing: string[] = [];
    for (const object of objects) {
      const got = await cluster().kubectl([
        "get",
        `${object.kind}.${object.apiVersion.includes("/") ? object.apiVersion.split("/")[0] : ""}`.replace(
          /\.$/,
          "",
        ),
        object.metadata.name,
        "--namespace",
        object.metadata.namespace ?? NAMESPACE,
        "-o",
        "name",
      ]);
      if (got.code !== 0) missing.push(`${object.kind}/${object.metadata.name}: ${got.stderr.trim()}`);
    }
    expect(missing).toEqual([]);
    for (const crd of ["lightnodepools.lightfleet.io", "lightnodes.lightfleet.io"]) {
      const established = await cluster().kubectl([
        "wait",
        "--for=condition=Established",
        `crd/${crd}`,
        "--timeout=30s",
      ]);
      expect(established.code, established.stderr).toBe(0);
    }
  }, 180_000);

  it("runs the controller and the gateway with the chart's service accounts: every light node Healthy, no call refused", async () => {
    for (const network of NETWORKS) {
      await waitFor(
        async () => {
          const list = await lightPods(network.name);
          if (list.length !== 2) return false;
          const states = await Promise.all(
            list.map((p) => lightNode(p.metadata!.name!).then((ln) => ln.status?.state)),
          );
          return (
            states.every((s) => s === "Healthy") && list.every((p) => podCondition(p, "Ready") === "True")
          );
        },
        {
          timeoutMs: 120_000,
          intervalMs: 500,
          what: () => `every ${network.name} light node Healthy and Ready${podOutputTail()}`,
        },
      );
    }
    const events = await cluster().plane.auditEvents();
    const ours = events.filter((e) => e.user.username.startsWith(`system:serviceaccount:${NAMESPACE}:`));
    expect(ours.length).toBeGreaterThan(20);
    const refused = ours.filter((e) => e.responseStatus?.code === 403);
    expect(refused.map((e) => `${e.user.username} ${e.verb} ${e.requestURI}`)).toEqual([]);
  }, 180_000);

  const helmTest = () =>
    cluster().helm(["test", RELEASE, "--namespace", NAMESPACE, "--timeout", "30s"], 60_000);
  const testPod = `${RELEASE}-lightfleet-test-gateway`;
  const keysTestPod = `${RELEASE}-lightfleet-test-keys`;

  it("passes helm test: the hook pod calls the gateway by its Service name and the kubelet reports it Succeeded", async () => {
    const tested = await helmTest();
    expect(tested.code, `${tested.stdout}\n${tested.stderr}${podOutputTail()}`).toBe(0);
    expect(tested.stdout).toMatch(new RegExp(`TEST SUITE:\\s+${testPod}[\\s\\S]*Phase:\\s+Succeeded`));
    // The hook's own output: the Service's DNS name (as cluster DNS and the Service proxy would serve it), answered.
    expect(cluster().podLogs).toContainEqual(
      expect.stringMatching(
        new RegExp(`^${testPod}: eth_blockNumber via http://${RELEASE}-lightfleet-gateway:8545/alpha: \\d+$`),
      ),
    );
    // The key API's hook: its /healthz by the Service's name, answered ok by a key API that reached its store.
    expect(tested.stdout).toMatch(new RegExp(`TEST SUITE:\\s+${keysTestPod}[\\s\\S]*Phase:\\s+Succeeded`));
    expect(cluster().podLogs).toContainEqual(
      expect.stringMatching(
        new RegExp(`^${keysTestPod}: http://${RELEASE}-lightfleet-keys:9464/healthz: ok`),
      ),
    );
  }, 120_000);

  it("hands the pool's spec to the engine whole: health options, ports and scaling as written in the values", async () => {
    const alpha = await pool("alpha");
    expect(alpha.spec.rpcPort).toBe(8547);
    expect(alpha.spec.wsPort).toBe(8548);
    const beta = await pool("beta");
    expect(beta.spec.rpcPort).toBe(8547);
    expect(beta.spec.wsPort).toBeUndefined();
    expect(alpha.spec.health).toMatchObject({
      syncingIsUnhealthy: false,
      maxLagBlocks: 3,
      restartAfter: "3s",
    });
    expect(alpha.spec.scaling).toMatchObject({ minReplicas: 2, maxReplicas: 4, targetRequestsPerNode: 1000 });
    // Probed on 8547, the nodes are Healthy (the test above); on the default 8545 they would be Unresponsive.
    const nodes = await lightPods("alpha");
    const status = await lightNode(nodes[0]!.metadata!.name!);
    expect(status.status?.head?.number).toBeGreaterThan(0);
  });

  const gatewayPod = async () => {
    const [pod] = (await pods("app.kubernetes.io/component=gateway")).filter(
      (p) => podCondition(p, "Ready") === "True",
    );
    const running = pod && cluster().kubelet.pod(NAMESPACE, pod.metadata!.name!);
    if (!running) {
      const logs = cluster()
        .podLogs.filter((line) => line.includes("-gateway-"))
        .slice(-20);
      throw new Error(`no ready gateway pod\n${logs.map((line) => line.slice(0, 600)).join("\n")}`);
    }
    return { rpc: running.running.resolvePort!("rpc")!, admin: running.running.resolvePort!("admin")! };
  };
  /** Calls each node served, from the gateway's lightfleet_gateway_upstream_requests_total. */
  const callsByNode = async (admin: { host: string; port: number }) => {
    const text = await (await fetch(`http://${admin.host}:${admin.port}/metrics`)).text();
    const calls = new Map<string, number>();
    for (const match of text.matchAll(/^lightfleet_gateway_upstream_requests_total\{([^}]*)\} (\S+)$/gm)) {
      const upstream = /upstream="([^"]+)"/.exec(match[1]!)?.[1] ?? "";
      calls.set(upstream, (calls.get(upstream) ?? 0) + Number(match[2]));
    }
    return calls;
  };
  const rpc = async (target: { host: string; port: number }, method: string, params: unknown[] = []) => {
    const res = await fetch(`http://${target.host}:${target.port}/alpha`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
    });
    return (await res.json()) as { result?: unknown; error?: { message: string } };
  };
  const readyAddresses = async (service: string) => {
    const slices = await api().discovery.listNamespacedEndpointSlice({
      namespace: NAMESPACE,
      labelSelector: `kubernetes.io/service-name=${service}`,
    });
    return slices.items.flatMap((slice) =>
      slice.endpoints.filter((e) => e.conditions?.ready !== false).flatMap((e) => e.addresses),
    );
  };

  it("routes through the real loop: a lagging node's gate goes False, the EndpointSlice controller drops it, the gateway stops calling it", async () => {
    const service = `${RELEASE}-lightfleet-alpha`;
    // The victim is a settled node: Healthy, its pod Ready and not being replaced, its address ready behind the
    // Service. On a loaded machine the controller may still restart a node (a stall of stallAfter) between that look
    // and the fault; its devnet node is gone until the replacement pod attaches, and the pick is made again.
    const { name, ip, other } = await waitFor(
      async () => {
        const [victim, other] = (await lightPods("alpha"))
          .filter((p) => !p.metadata!.deletionTimestamp && podCondition(p, "Ready") === "True")
          .sort((a, b) => a.metadata!.name!.localeCompare(b.metadata!.name!));
        if (!victim || !other) return undefined;
        const name = victim.metadata!.name!;
        const ip = victim.status!.podIP!;
        if ((await lightNode(name)).status?.state !== "Healthy") return undefined;
        if (!(await readyAddresses(service)).includes(ip)) return undefined;
        // Throws DevnetNotFoundError while the pod is being replaced: waitFor tries again and reports the last error.
        await cluster().devnet.fault(name, { kind: "lag", blocks: 6 });
        return { name, ip, other: other.metadata!.name! };
      },
      {
        timeoutMs: 60_000,
        intervalMs: 250,
        what: () => `a settled alpha node to lag${podOutputTail()}`,
      },
    );
    const unready = await waitFor(
      async () => {
        const [pod] = (await lightPods("alpha")).filter((p) => p.metadata!.name === name);
        return pod &&
          podCondition(pod, "lightfleet.io/in-sync") === "False" &&
          podCondition(pod, "Ready") === "False"
          ? pod
          : undefined;
      },
      {
        timeoutMs: 30_000,
        intervalMs: 200,
        what: () => `${name} unready through its readiness gate${podOutputTail()}`,
      },
    );
    expect(unready.status?.containerStatuses?.[0]?.ready).toBe(true); // the container is fine: the gate decides
    await waitFor(async () => !(await readyAddresses(service)).includes(ip), {
      timeoutMs: 30_000,
      intervalMs: 200,
      what: `the EndpointSlice controller to drop ${ip} from ${service}`,
    });

    const gateway = await gatewayPod();
    await waitFor(
      async () => {
        const before = await callsByNode(gateway.admin);
        for (let i = 0; i < 20; i++)
          expect((await rpc(gateway.rpc, "eth_getBlockByNumber", ["latest", false])).error).toBeUndefined();
        const after = await callsByNode(gateway.admin);
        const served = (node: string) => (after.get(node) ?? 0) - (before.get(node) ?? 0);
        return served(name) === 0 && served(other) >= 20;
      },
      {
        timeoutMs: 30_000,
        intervalMs: 500,
        what: () => `the gateway to call only ${other}${podOutputTail()}`,
      },
    );

    await cluster().devnet.fault(name, { kind: "heal" });
    await waitFor(async () => (await readyAddresses(service)).includes(ip), {
      timeoutMs: 60_000,
      intervalMs: 200,
      what: () => `${ip} back in ${service} after heal${podOutputTail()}`,
    });
  }, 180_000);

  it("autoscales on the rate it scrapes from the gateway pod's /metrics at the address its EndpointSlice advertises", async () => {
    const gateway = await gatewayPod();
    // Calls the gateway sends on to a node: what the rate counts (eth_blockNumber it answers itself).
    const traffic = async () => {
      for (let i = 0; i < 10; i++)
        expect((await rpc(gateway.rpc, "eth_getBlockByNumber", ["latest", false])).error).toBeUndefined();
    };
    const leases = await api().coordination.listNamespacedLease({
      namespace: NAMESPACE,
      labelSelector: `app.kubernetes.io/instance=${RELEASE}`,
    });
    const leader = await api().core.readNamespacedPod({
      name: leases.items[0]!.spec!.holderIdentity!,
      namespace: NAMESPACE,
    });
    // The leader's own admin port, at its pod IP, as a Prometheus would scrape it.
    const adminPort = leader.spec!.containers[0]!.ports!.find((p) => p.name === "admin")!.containerPort;
    const leaderRate = async () => {
      const text = await (await fetch(`http://${leader.status!.podIP}:${adminPort}/metrics`)).text();
      return Number(
        /^lightfleet_pool_request_rate\{[^}]*network="alpha"[^}]*\} (\S+)$/m.exec(text)?.[1] ?? 0,
      );
    };
    await waitFor(
      async () => {
        await traffic();
        return (await leaderRate()) > 0;
      },
      {
        timeoutMs: 20_000,
        intervalMs: 500,
        what: () => `the leader to read alpha's rate${podOutputTail()}`,
      },
    );
    // A rate alone does not make a status write due: the pool's status shows it at its next refresh (30 s at most).
    const alpha = await waitFor(
      async () => {
        await traffic();
        const current = await pool("alpha");
        return (current.status?.requestRate ?? 0) > 0 ? current : undefined;
      },
      {
        timeoutMs: 45_000,
        intervalMs: 1_000,
        what: () => `alpha's status to show the scraped request rate${podOutputTail()}`,
      },
    );
    expect(alpha.status?.conditions?.find((c) => c.type === "ScalingActive")).toMatchObject({
      status: "True",
      reason: "Scaling",
    });
  }, 90_000);

  it("evicts a stalled node through the Eviction API against the chart's PDB; the StatefulSet controller recreates it and it comes back Healthy", async () => {
    const [victim] = (await lightPods("alpha")).sort((a, b) =>
      a.metadata!.name!.localeCompare(b.metadata!.name!),
    );
    const name = victim!.metadata!.name!;
    const uid = victim!.metadata!.uid!;
    await cluster().devnet.fault(name, { kind: "stall" });
    const replacement = await waitFor(
      async () =>
        (await lightPods("alpha")).find((p) => p.metadata!.name === name && p.metadata!.uid !== uid),
      { timeoutMs: 90_000, intervalMs: 250, what: () => `${name} evicted and recreated${podOutputTail()}` },
    );
    const evictions = (await cluster().plane.auditEvents()).filter(
      (e) => e.objectRef?.subresource === "eviction" && e.objectRef.name === name && e.verb === "create",
    );
    expect(evictions.some((e) => e.responseStatus?.code === 201)).toBe(true);
    expect(
      evictions.every(
        (e) => e.user.username === `system:serviceaccount:${NAMESPACE}:${RELEASE}-lightfleet-controller`,
      ),
    ).toBe(true);
    await waitFor(
      async () => {
        const node = await lightNode(name);
        const [pod] = (await lightPods("alpha")).filter((p) => p.metadata!.uid === replacement.metadata!.uid);
        return (
          node.status?.state === "Healthy" &&
          (node.status.restarts ?? 0) >= 1 &&
          pod &&
          podCondition(pod, "Ready") === "True"
        );
      },
      {
        timeoutMs: 90_000,
        intervalMs: 250,
        what: () => `${name} Healthy again after its restart${podOutputTail()}`,
      },
    );
  }, 240_000);

  it("shows real values in kubectl's printer columns, answers kubectl wait, and says why a pool it cannot run is not Ready", async () => {
    const pools = await cluster().kubectl(["get", "lnp", "--namespace", NAMESPACE]);
    expect(pools.code, pools.stderr).toBe(0);
    const [header, ...rows] = pools.stdout.trim().split("\n");
    expect(header).toMatch(/^NAME\s+NETWORK\s+HEALTHY\s+/);
    const alphaRow = rows.find((r) => r.startsWith("alpha "))!.split(/\s+/);
    expect(alphaRow[1]).toBe("alpha");
    expect(alphaRow[2]).toMatch(/^2\/2$/);
    expect(Number(alphaRow[3])).toBeGreaterThan(0); // reference head
    const nodes = await cluster().kubectl(["get", "ln", "--namespace", NAMESPACE]);
    expect(nodes.stdout).toMatch(/NAME\s+NETWORK\s+STATE\s+HEAD\s+LAG\s+RESTARTS\s+READY\s+AGE/);
    expect(nodes.stdout).toMatch(
      new RegExp(`${RELEASE}-lightfleet-beta-0\\s+beta\\s+Healthy\\s+\\d+\\s+\\d+\\s+\\d+\\s+True\\s`),
    );

    const wait = await cluster().kubectl([
      "wait",
      "--for=condition=Ready",
      "lnp/alpha",
      "--namespace",
      NAMESPACE,
      "--timeout=60s",
    ]);
    expect(wait.code, wait.stderr).toBe(0);

    // Refused at once by the CRD's own rules, before any controller sees it.
    const alpha = await pool("alpha");
    const invalid = await cluster().kubectl(
      ["apply", "--namespace", NAMESPACE, "-f", "-"],
      20_000,
      JSON.stringify({
        apiVersion: "lightfleet.io/v1alpha1",
        kind: "LightNodePool",
        metadata: { name: "gamma" },
        spec: { ...alpha.spec, network: "gamma", scaling: { minReplicas: 5, maxReplicas: 2 } },
      }),
    );
    expect(invalid.code).not.toBe(0);
    expect(invalid.stderr).toMatch(/minReplicas must not exceed maxReplicas/);

    // Valid to the schema, refused by the controller: a second pool for a network another pool runs.
    await api().custom.createNamespacedCustomObject({
      ...GROUP,
      plural: "lightnodepools",
      body: {
        apiVersion: "lightfleet.io/v1alpha1",
        kind: "LightNodePool",
        metadata: { name: "gamma", labels: alpha.metadata.labels }, // the release's: its controller runs only its own class
        spec: alpha.spec,
      },
    });
    const refused = await cluster().kubectl(
      ["wait", "--for=condition=Ready=False", "lnp/gamma", "--namespace", NAMESPACE, "--timeout=30s"],
      40_000,
    );
    expect(refused.code, refused.stderr).toBe(0);
    const gamma = await pool("gamma");
    const ready = gamma.status?.conditions?.find((c) => c.type === "Ready");
    expect(ready).toMatchObject({
      status: "False",
      reason: "DuplicateNetwork",
      observedGeneration: gamma.metadata.generation,
    });
    expect(ready?.message).toMatch(/network alpha is already run by LightNodePool rpc\/alpha/);
    expect((await pool("alpha")).status?.conditions?.find((c) => c.type === "Ready")?.status).toBe("True");
    await api().custom.deleteNamespacedCustomObject({ ...GROUP, plural: "lightnodepools", name: "gamma" });
  }, 120_000);

  it("writes status the real schema accepts, with no stale fields, and observedGeneration following real generations", async () => {
    const [pod] = (await lightPods("beta")).sort((a, b) =>
      a.metadata!.name!.localeCompare(b.metadata!.name!),
    );
    const name = pod!.metadata!.name!;
    const running = cluster().kubelet.pod(NAMESPACE, name)!;
    running.running.signal("SIGSTOP"); // hung: probes time out
    try {
      const hung = await waitFor(
        async () => {
          const node = await lightNode(name);
          return node.status?.state === "Unresponsive" ? node : undefined;
        },
        { timeoutMs: 30_000, intervalMs: 200, what: () => `${name} Unresponsive${podOutputTail()}` },
      );
      expect(hung.status?.head).toBeUndefined();
      expect(hung.status?.lagBlocks).toBeUndefined();
      expect(hung.status?.lagSeconds).toBeUndefined();
    } finally {
      running.running.signal("SIGCONT");
    }

    const before = await pool("beta");
    await api().custom.patchNamespacedCustomObject(
      {
        ...GROUP,
        plural: "lightnodepools",
        name: "beta",
        body: { spec: { health: { ...before.spec.health, maxLagBlocks: 4 } } },
      },
      setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
    );
    const after = await pool("beta");
    expect(after.metadata.generation).toBe((before.metadata.generation ?? 0) + 1);
    await waitFor(async () => (await pool("beta")).status?.observedGeneration === after.metadata.generation, {
      timeoutMs: 30_000,
      intervalMs: 200,
      what: "observedGeneration to follow the spec change",
    });
  }, 120_000);

  it("scales through the real scale subresource: the StatefulSet controller makes the pod and the controller takes it up", async () => {
    await api().custom.patchNamespacedCustomObject(
      { ...GROUP, plural: "lightnodepools", name: "alpha", body: { spec: { scaling: { minReplicas: 3 } } } },
      setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
    );
    const statefulSet = `${RELEASE}-lightfleet-alpha`;
    await waitFor(
      async () =>
        (await api().apps.readNamespacedStatefulSet({ name: statefulSet, namespace: NAMESPACE })).spec
          ?.replicas === 3,
      {
        timeoutMs: 60_000,
        intervalMs: 250,
        what: () => `${statefulSet} scaled to 3${podOutputTail()}`,
      },
    );
    const scaleCalls = (await cluster().plane.auditEvents()).filter(
      (e) =>
        e.objectRef?.resource === "statefulsets" && e.objectRef.subresource === "scale" && e.verb === "patch",
    );
    expect(scaleCalls.length).toBeGreaterThan(0);
    expect(
      scaleCalls.every(
        (e) => e.user.username === `system:serviceaccount:${NAMESPACE}:${RELEASE}-lightfleet-controller`,
      ),
    ).toBe(true);
    await waitFor(async () => (await lightNode(`${statefulSet}-2`)).status?.state === "Healthy", {
      timeoutMs: 90_000,
      intervalMs: 250,
      what: () => `the new pod ${statefulSet}-2 Healthy${podOutputTail()}`,
    });
  }, 150_000);

  it("fails over between the chart's two controllers through the real Lease; a paused old leader does not act when resumed", async () => {
    const leaseHolder = async () => {
      const leases = await api().coordination.listNamespacedLease({
        namespace: NAMESPACE,
        labelSelector: `app.kubernetes.io/instance=${RELEASE}`,
      });
      expect(leases.items).toHaveLength(1);
      return leases.items[0]!.spec?.holderIdentity;
    };
    const controllers = async () =>
      (await pods("app.kubernetes.io/component=controller")).map((p) => p.metadata!.name!);
    const first = await waitFor(leaseHolder, { what: "a leader" });
    expect(await controllers()).toContain(first);

    // Killed: the process dies at once and its pod goes (as with a node lost), so it cannot come back as itself.
    const killedAt = Date.now();
    cluster().kubelet.pod(NAMESPACE, first!)!.running.signal("SIGKILL");
    await api().core.deleteNamespacedPod({ name: first!, namespace: NAMESPACE, gracePeriodSeconds: 0 });
    const second = await waitFor(
      async () => {
        const holder = await leaseHolder();
        return holder && holder !== first ? holder : undefined;
      },
      {
        timeoutMs: 30_000,
        intervalMs: 200,
        what: () => `a new leader after ${first} was killed${podOutputTail()}`,
      },
    );
    expect(Date.now() - killedAt).toBeLessThan(15_000 + 2_000 + 3_000); // lease duration + retry period + slack

    // Paused: its lease runs out, the other takes over; resumed, it finds it no longer leads.
    const pausedPod = cluster().kubelet.pod(NAMESPACE, second!)!;
    pausedPod.running.signal("SIGSTOP");
    let resumedAt = 0;
    try {
      await waitFor(
        async () => {
          const holder = await leaseHolder();
          return holder && holder !== second;
        },
        {
          timeoutMs: 40_000,
          intervalMs: 200,
          what: () => `a new leader while ${second} is paused${podOutputTail()}`,
        },
      );
    } finally {
      pausedPod.running.signal("SIGCONT");
      resumedAt = Date.now();
    }
    const admin = pausedPod.running.resolvePort!("admin")!;
    await waitFor(
      async () => {
        const text = await (await fetch(`http://${admin.host}:${admin.port}/metrics`)).text();
        return !/^lightfleet_node_state\{/m.test(text);
      },
      { timeoutMs: 15_000, intervalMs: 200, what: `${second} to export no node states while it follows` },
    );
    // Let a few of the new leader's rounds pass, then look at what the resumed one did after it was resumed.
    const lightNodeName = `${RELEASE}-lightfleet-alpha-0`;
    const written = await waitFor(async () => (await lightNode(lightNodeName)).status?.lastProbeTime, {
      what: `${lightNodeName}'s status`,
    });
    await waitFor(async () => (await lightNode(lightNodeName)).status?.lastProbeTime !== written, {
      timeoutMs: 60_000,
      intervalMs: 500,
      what: "the new leader's status writes",
    });
    const acted = (await cluster().plane.auditEvents()).filter(
      (e) =>
        Date.parse(e.stageTimestamp) > resumedAt + 1_000 &&
        e.user.extra?.["authentication.kubernetes.io/pod-name"]?.[0] === second &&
        ["create", "patch", "update", "delete"].includes(e.verb) &&
        e.objectRef?.resource !== "leases",
    );
    expect(acted.map((e) => `${e.verb} ${e.requestURI}`)).toEqual([]);
  }, 180_000);

  it("fails helm test when the gateway is unreachable: no ready endpoint behind its Service, the hook pod Failed", async () => {
    const gateway = `${RELEASE}-lightfleet-gateway`;
    await api().apps.patchNamespacedDeploymentScale(
      { name: gateway, namespace: NAMESPACE, body: { spec: { replicas: 0 } } },
      setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
    );
    await waitFor(async () => (await readyAddresses(gateway)).length === 0, {
      timeoutMs: 60_000,
      intervalMs: 250,
      what: `${gateway} without ready endpoints`,
    });
    const tested = await helmTest();
    expect(tested.code, tested.stdout).not.toBe(0);
    expect(tested.stderr + tested.stdout).toMatch(new RegExp(`${testPod}.*failed|Phase:\\s+Failed`));
    const pod = await api().core.readNamespacedPod({ name: testPod, namespace: NAMESPACE });
    expect(pod.status?.phase).toBe("Failed");
    expect(pod.status?.containerStatuses?.[0]?.state?.terminated).toMatchObject({
      exitCode: 1,
      reason: "Error",
    });
    // It says why in one line: asked again until its deadline, the last failure was the connection (a call that
    // never settled would say "no answer within").
    expect(cluster().podLogs).toContainEqual(
      expect.stringMatching(
        new RegExp(
          `^${testPod}: eth_blockNumber via http://${RELEASE}-lightfleet-gateway:8545/alpha: ` +
            `still failing after \\d+ s: fetch failed`,
        ),
      ),
    );
    // With no gateway pod left to read, the rate is unavailable: the pool holds its size and shows no old rate.
    const held = await waitFor(
      async () => {
        const current = await pool("alpha");
        const scaling = current.status?.conditions?.find((c) => c.type === "ScalingActive");
        return scaling?.reason === "RateUnavailable" ? current : undefined;
      },
      {
        timeoutMs: 45_000,
        intervalMs: 500,
        what: () => `alpha's scaling held for want of a rate${podOutputTail()}`,
      },
    );
    expect(held.status?.requestRate).toBeUndefined();
    expect(held.status?.conditions?.find((c) => c.type === "ScalingActive")?.status).toBe("False");
  }, 200_000);

  const keysSecret = `${RELEASE}-lightfleet-keys-secrets`;
  const secretData = async () =>
    (await api().core.readNamespacedSecret({ name: keysSecret, namespace: NAMESPACE })).data ?? {};

  it("upgrades with helm: the key API's generated pepper and seed key kept (the chart's lookup), no field of the controller's met", async () => {
    // The controller and gateway write as "lightfleet" (their User-Agent), and the controller only status.
    type Managed = { metadata?: V1ObjectMeta };
    const managers = (object: Managed) =>
      (object.metadata?.managedFields ?? []).map(
        (f) => `${f.manager}${f.subresource ? `/${f.subresource}` : ""}`,
      );
    const pools = (await api().custom.listNamespacedCustomObject({ ...GROUP, plural: "lightnodepools" })) as {
      items: Managed[];
    };
    for (const pool of pools.items)
      expect(managers(pool).filter((m) => m.startsWith("lightfleet"))).toEqual(["lightfleet/status"]);
    const nodes = (await api().custom.listNamespacedCustomObject({ ...GROUP, plural: "lightnodes" })) as {
      items: Managed[];
    };
    expect(nodes.items.length).toBeGreaterThan(0);
    for (const node of nodes.items)
      expect(managers(node).every((m) => m.startsWith("lightfleet"))).toBe(true);

    const before = await secretData();
    expect(Object.keys(before).sort()).toEqual(["LIGHTFLEET_KEYS_PEPPER", "LIGHTFLEET_KEYS_SEED_KEY"]);
    // The tests above edited pool specs by hand, as an operator might; Helm's server-side apply names that editor
    // (this client's manager) in its conflict, never the controller, and --force-conflicts takes the chart's values.
    const refused = await cluster().upgrade(RELEASE, NAMESPACE);
    expect(refused.code).not.toBe(0);
    const conflicting = [...refused.stderr.matchAll(/conflict with \\?"([^"\\]+)\\?"/g)].map((m) => m[1]);
    expect(conflicting.length, refused.stderr).toBeGreaterThan(0);
    expect(new Set(conflicting)).toEqual(new Set(["node-fetch"]));
    const upgraded = await cluster().upgrade(RELEASE, NAMESPACE, ["--force-conflicts"]);
    expect(upgraded.code, upgraded.stderr).toBe(0);
    expect(upgraded.stdout).toMatch(/REVISION: 3/);
    // New random values would break every key made before (the pepper) and every two-factor seed (the seed key).
    expect(await secretData()).toEqual(before);
    expect((await pool("alpha")).spec.scaling).toMatchObject({ minReplicas: 2 });
  }, 200_000);

  it("garbage-collects each LightNode with its pod (helm uninstall)", async () => {
    expect(
      (await api().custom.listNamespacedCustomObject({ ...GROUP, plural: "lightnodes" })).items.length,
    ).toBeGreaterThan(0);
    const uninstalled = await cluster().helm(
      ["uninstall", RELEASE, "--namespace", NAMESPACE, "--wait", "--timeout", "60s"],
      90_000,
    );
    expect(uninstalled.code, uninstalled.stderr).toBe(0);
    // The key API's Secret outlives the release (helm.sh/resource-policy: keep), so a reinstall keeps every key.
    expect(Object.keys(await secretData()).length).toBe(2);
    await waitFor(
      async () =>
        (
          (await api().custom.listNamespacedCustomObject({ ...GROUP, plural: "lightnodes" })) as {
            items: unknown[];
          }
        ).items.length === 0,
      { timeoutMs: 60_000, intervalMs: 250, what: "every LightNode garbage-collected with its pod" },
    );
  }, 120_000);
});
