import { readFile, readdir } from "node:fs/promises";
import { join } from "node:path";
import type { ValidateFunction } from "ajv";
import { parse } from "yaml";
import { beforeAll, describe, expect, it } from "vitest";
import { CHART_DIR, helm, parseObjects, renderChart } from "../support/helm.js";
import type { K8sObject } from "../support/helm.js";
import { crdValidators, loadCrds, validateObject } from "./validateObject.js";
import { structuralProblems } from "./structuralSchema.js";

const FULL = "charts/lightfleet/ci/full-values.yaml";

/** Every values file the chart is checked with: defaults, the full-featured file, and the documented examples. */
async function valuesFiles(): Promise<string[][]> {
  const examples = (await readdir(join(CHART_DIR, "examples"))).filter((f) => f.endsWith(".yaml")).sort();
  return [[], [FULL], ...examples.map((f) => [`charts/lightfleet/examples/${f}`])];
}

function find(objects: K8sObject[], kind: string, name: string): K8sObject {
  const found = objects.find((o) => o.kind === kind && o.metadata.name === name);
  if (!found)
    throw new Error(
      `no ${kind}/${name} among ${objects.map((o) => `${o.kind}/${o.metadata.name}`).join(", ")}`,
    );
  return found;
}

type PodSpec = {
  securityContext?: Record<string, unknown>;
  containers: Container[];
  volumes?: { name: string; emptyDir?: unknown; persistentVolumeClaim?: unknown; configMap?: unknown }[];
  readinessGates?: { conditionType: string }[];
  automountServiceAccountToken?: boolean;
};
type Container = {
  name: string;
  args?: string[];
  command?: string[];
  env?: { name: string; value?: string; valueFrom?: unknown }[];
  resources?: unknown;
  securityContext?: Record<string, unknown> & { capabilities?: { drop?: string[] } };
  volumeMounts?: { name: string; mountPath: string; readOnly?: boolean }[];
};

/** The pod spec of a workload or a bare Pod; undefined for other kinds. */
function podSpec(object: K8sObject): PodSpec | undefined {
  if (object.kind === "Pod") return object.spec as PodSpec;
  const spec = object.spec as { template?: { spec: PodSpec } } | undefined;
  if (["Deployment", "StatefulSet", "DaemonSet", "Job"].includes(object.kind)) return spec?.template?.spec;
  return undefined;
}

describe("helm chart", () => {
  let crds: Map<string, ValidateFunction>;

  beforeAll(async () => {
    crds = crdValidators(await loadCrds());
  });

  it("passes helm lint with default values and with the full-featured values file", async () => {
    for (const args of [
      [],
      ["--values", FULL],
      ["--values", "charts/lightfleet/examples/production-values.yaml"],
    ]) {
      const result = await helm(["lint", CHART_DIR, "--strict", ...args]);
      expect(result.stderr + result.stdout).toContain("1 chart(s) linted, 0 chart(s) failed");
      expect(result.code).toBe(0);
    }
  });

  it("installs valid structural CRDs for LightNodePool and LightNode", async () => {
    const loaded = await loadCrds();
    expect(loaded.map((c) => c.spec.names.kind).sort()).toEqual(["LightNode", "LightNodePool"]);
    for (const crd of loaded) {
      expect(crd.spec.group).toBe("lightfleet.io");
      for (const version of crd.spec.versions) {
        const schema = version.schema?.openAPIV3Schema;
        expect(schema, `${crd.spec.names.kind} ${version.name} has a schema`).toBeDefined();
        expect(structuralProblems(schema!)).toEqual([]);
      }
    }
  });

  it("renders only objects that validate against their kind's schema, for every values file", async () => {
    const sets = [[], ["autoscaling.mode=hpa"], ["autoscaling.mode=keda"], ["autoscaling.mode=off"]];
    let checked = 0;
    for (const values of await valuesFiles()) {
      for (const set of values.length && values[0] === FULL ? sets : [[]]) {
        const { objects } = await renderChart({ values, set, extraArgs: ["--include-crds"] });
        expect(objects.length).toBeGreaterThan(5);
        const problems = objects.flatMap((o) => validateObject(o, crds));
        expect(problems, `values ${values.join(",") || "default"} ${set.join(",")}`).toEqual([]);
        checked += objects.length;
      }
    }
    expect(checked).toBeGreaterThan(100);
  });

  it("the validators reject broken objects (so the check above means something)", () => {
    const badPdb = {
      apiVersion: "policy/v1",
      kind: "PodDisruptionBudget",
      metadata: { name: "x" },
      spec: { unhealthyPodEvictionPolicy: "Sometimes" },
    };
    expect(validateObject(badPdb, crds).join()).toContain("unhealthyPodEvictionPolicy");
    const badPool = {
      apiVersion: "lightfleet.io/v1alpha1",
      kind: "LightNodePool",
      metadata: { name: "x" },
      spec: { network: 42 },
    };
    expect(validateObject(badPool, crds)).not.toEqual([]);
    const unknown = { apiVersion: "example.com/v1", kind: "Gadget", metadata: { name: "x" } };
    expect(validateObject(unknown, crds).join()).toContain("no schema known");
  });

  it("runs every pod non-root, read-only, without capabilities, with seccomp; only data volumes are writable", async () => {
    for (const values of await valuesFiles()) {
      const { objects } = await renderChart({ values });
      for (const object of objects) {
        const pod = podSpec(object);
        if (!pod) continue;
        const where = `${object.kind}/${object.metadata.name}`;
        expect(pod.securityContext?.runAsNonRoot, where).toBe(true);
        expect(typeof pod.securityContext?.runAsUser, where).toBe("number");
        expect(pod.securityContext?.seccompProfile, where).toEqual({ type: "RuntimeDefault" });
        const writableVolumes = new Set(
          (pod.volumes ?? []).filter((v) => v.emptyDir || v.persistentVolumeClaim).map((v) => v.name),
        );
        // StatefulSets get their data PVC from volumeClaimTemplates.
        const claims = (object.spec as { volumeClaimTemplates?: { metadata: { name: string } }[] })
          ?.volumeClaimTemplates;
        for (const claim of claims ?? []) writableVolumes.add(claim.metadata.name);
        for (const container of pod.containers) {
          const sc = container.securityContext ?? {};
          expect(sc.readOnlyRootFilesystem, `${where} ${container.name}`).toBe(true);
          expect(sc.allowPrivilegeEscalation, `${where} ${container.name}`).toBe(false);
          expect(sc.capabilities?.drop, `${where} ${container.name}`).toEqual(["ALL"]);
          for (const mount of container.volumeMounts ?? []) {
            if (!mount.readOnly) expect(writableVolumes, `${where} ${mount.mountPath}`).toContain(mount.name);
          }
        }
      }
    }
  });

  it("follows the conventions of well-kept charts with default values", async () => {
    const { objects } = await renderChart();
    const kinds = new Set(objects.map((o) => o.kind));
    for (const monitoring of ["ServiceMonitor", "PodMonitor", "PrometheusRule", "NetworkPolicy", "Ingress"]) {
      expect(kinds, monitoring).not.toContain(monitoring);
    }
    expect(objects.some((o) => o.metadata.labels?.grafana_dashboard)).toBe(false);
    for (const object of objects) {
      const labels = object.metadata.labels ?? {};
      expect(labels["app.kubernetes.io/name"], object.kind).toBe("lightfleet");
      expect(labels["app.kubernetes.io/instance"], object.kind).toBe("lightfleet");
      expect(labels["app.kubernetes.io/managed-by"], object.kind).toBe("Helm");
      expect(labels["helm.sh/chart"], object.kind).toMatch(/^lightfleet-\d/);
    }
  });

  it("keeps the chart version out of every selector", async () => {
    const { objects } = await renderChart({ values: [FULL] });
    const selectors = objects.flatMap((o) => {
      const spec = o.spec as
        { selector?: Record<string, unknown>; podSelector?: Record<string, unknown> } | undefined;
      return [spec?.selector, spec?.podSelector].filter((s) => s !== undefined);
    });
    expect(selectors.length).toBeGreaterThan(10);
    for (const selector of selectors) {
      const text = JSON.stringify(selector);
      expect(text).not.toContain("helm.sh/chart");
      expect(text).not.toContain("app.kubernetes.io/version");
    }
  });

  it("lets the gateway serve through the shutdown delay and the drain within its grace period", async () => {
    const { objects } = await renderChart();
    const config = parse(
      (find(objects, "ConfigMap", "lightfleet-config").data as Record<string, string>)["lightfleet.yaml"]!,
    ) as { gateway: { shutdownDelay: string } };
    expect(config.gateway.shutdownDelay).toBe("10s");
    const pod = (
      find(objects, "Deployment", "lightfleet-gateway").spec as {
        template: { spec: { terminationGracePeriodSeconds: number } };
      }
    ).template.spec;
    expect(pod.terminationGracePeriodSeconds).toBeGreaterThanOrEqual(10 + 10);
  });

  it("runs two controller replicas with leader election identity and the controller subcommand", async () => {
    const { objects } = await renderChart();
    const controller = find(objects, "Deployment", "lightfleet-controller");
    expect((controller.spec as { replicas: number }).replicas).toBe(2);
    const container = podSpec(controller)!.containers[0]!;
    expect(container.args).toEqual(["controller", "--config", "/etc/lightfleet/lightfleet.yaml"]);
    expect(container.env?.map((e) => e.name)).toEqual(expect.arrayContaining(["POD_NAME", "POD_NAMESPACE"]));
    const gateway = podSpec(find(objects, "Deployment", "lightfleet-gateway"))!.containers[0]!;
    expect(gateway.args?.[0]).toBe("gateway");
    const keys = podSpec(find(objects, "Deployment", "lightfleet-keys"))!.containers[0]!;
    expect(keys.args?.[0]).toBe("keys-api");
    const service = find(objects, "Service", "lightfleet-gateway");
    expect((service.spec as { ports: { port: number }[] }).ports.map((p) => p.port)).toEqual([8545]);
    const admin = find(objects, "Service", "lightfleet-gateway-admin");
    expect((admin.spec as { ports: { port: number }[] }).ports.map((p) => p.port)).toEqual([9464]);
    expect(
      (find(objects, "Service", "lightfleet-keys").spec as { ports: { port: number }[] }).ports[0]!.port,
    ).toBe(8080);
  });

  it("caps the controller's V8 heap near its memory request, unless told not to", async () => {
    const nodeOptions = async (set: string[] = []) =>
      podSpec(
        find((await renderChart({ set })).objects, "Deployment", "lightfleet-controller"),
      )!.containers[0]!.env?.find((e) => e.name === "NODE_OPTIONS")?.value;
    // V8 sizes its heap from the host's memory (4 GiB on a 24 GiB node) and collects lazily: the pod would sit far
    // above its 192Mi request (bench:controller).
    expect(await nodeOptions()).toBe("--max-old-space-size=192");
    expect(await nodeOptions(["controller.maxHeapMiB=320"])).toBe("--max-old-space-size=320");
    expect(await nodeOptions(["controller.maxHeapMiB=0"])).toBeUndefined();
    const bad = await helm(["template", "x", CHART_DIR, "--set", "controller.maxHeapMiB=-5"]);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain("/controller/maxHeapMiB");
  });

  it("renders light-node workloads with the readiness gate, injected peers and an evicting PDB", async () => {
    const { objects } = await renderChart({ values: [FULL] });
    const sts = find(objects, "StatefulSet", "lightfleet-mainnet");
    const pod = podSpec(sts)!;
    expect(pod.readinessGates).toEqual([{ conditionType: "lightfleet.io/in-sync" }]);
    const env = Object.fromEntries((pod.containers[0]!.env ?? []).map((e) => [e.name, e.value]));
    expect(env.RESERVED_PEERS_HTTP).toBe("http://full-0.eth.svc:8545,http://full-1.eth.svc:8545");
    expect(env.RESERVED_PEER_HTTP).toBe("http://full-0.eth.svc:8545");
    expect(env.RESERVED_PEERS_ENODES?.split(",")).toHaveLength(2);
    expect(pod.containers[0]!.args).toContain("--bootnodes=$(RESERVED_PEERS_ENODES)");
    // Scaled by the controller: the chart leaves replicas alone so that upgrades do not reset the size.
    expect((sts.spec as { replicas?: number }).replicas).toBeUndefined();
    const pdb = find(objects, "PodDisruptionBudget", "lightfleet-mainnet");
    expect((pdb.spec as { unhealthyPodEvictionPolicy: string }).unhealthyPodEvictionPolicy).toBe(
      "AlwaysAllow",
    );
    const peers = find(objects, "ConfigMap", "lightfleet-mainnet-peers");
    expect((peers.data as Record<string, string>)["reserved-peers.txt"]).toMatch(
      /^enode:\/\/.*\nenode:\/\/.*\n$/,
    );

    const pools = objects.filter((o) => o.kind === "LightNodePool");
    expect(pools.map((p) => p.metadata.name)).toEqual(["mainnet", "sepolia"]);
    const mainnet = pools[0]!.spec as Record<string, unknown>;
    expect(mainnet).toMatchObject({ network: "mainnet", chainId: 1 });
    // A pool for a workload the chart does not manage names that workload.
    expect(JSON.stringify(pools[1]!.spec)).toContain("sepolia-helios");

    const { objects: off } = await renderChart({ values: [FULL], set: ["autoscaling.mode=off"] });
    expect((find(off, "StatefulSet", "lightfleet-mainnet").spec as { replicas: number }).replicas).toBe(2);
  });

  it("lists a client's port once when it serves WebSocket on its HTTP port (the API refuses a port listed twice)", async () => {
    const { objects } = await renderChart({
      values: [FULL],
      set: ["networks[0].workload.ports.http=8547", "networks[0].workload.ports.ws=8547"],
    });
    const container = podSpec(find(objects, "StatefulSet", "lightfleet-mainnet"))!.containers[0] as unknown;
    const ports = (container as { ports: Array<{ containerPort: number }> }).ports;
    expect(ports.filter((p) => p.containerPort === 8547)).toHaveLength(1);
    for (const name of ["lightfleet-mainnet", "lightfleet-mainnet-headless"]) {
      const service = find(objects, "Service", name).spec as { ports: Array<{ port: number }> };
      expect(service.ports.map((p) => p.port)).toEqual([8547]);
    }
    const pool = objects.find((o) => o.kind === "LightNodePool" && o.metadata.name === "mainnet")!.spec as {
      rpcPort: number;
      wsPort?: number;
    };
    expect(pool.rpcPort).toBe(8547);
    expect(pool.wsPort).toBeUndefined(); // the controller then uses the HTTP port for WebSocket
  });

  it("routes one ingress host per network with / and /ws to the gateway, and scales the gateway on CPU", async () => {
    const { objects } = await renderChart({ values: [FULL] });
    const ingress = find(objects, "Ingress", "lightfleet-gateway");
    const rules = (ingress.spec as { rules: { host: string; http: { paths: { path: string }[] } }[] }).rules;
    expect(rules.map((r) => r.host)).toEqual(["mainnet.rpc.example.org", "sepolia.rpc.example.org"]);
    for (const rule of rules) expect(rule.http.paths.map((p) => p.path)).toEqual(["/ws", "/"]);
    const hpa = find(objects, "HorizontalPodAutoscaler", "lightfleet-gateway");
    expect(JSON.stringify(hpa.spec)).toContain('"name":"cpu"');
    expect(
      (find(objects, "Deployment", "lightfleet-gateway").spec as { replicas?: number }).replicas,
    ).toBeUndefined();
  });

  it("keeps the key store on a PVC with one replica, or in PostgreSQL from a Secret with several", async () => {
    const sqlite = (await renderChart()).objects;
    const keys = find(sqlite, "Deployment", "lightfleet-keys");
    expect(keys.spec).toMatchObject({ replicas: 1, strategy: { type: "Recreate" } });
    expect(find(sqlite, "PersistentVolumeClaim", "lightfleet-keys").metadata.annotations).toMatchObject({
      "helm.sh/resource-policy": "keep",
    });
    const postgres = (await renderChart({ values: [FULL] })).objects;
    const shared = find(postgres, "Deployment", "lightfleet-keys");
    expect((shared.spec as { replicas: number }).replicas).toBe(2);
    const env = podSpec(shared)!.containers[0]!.env!;
    expect(env.find((e) => e.name === "DATABASE_URL")?.valueFrom).toEqual({
      secretKeyRef: { name: "lightfleet-keys-db", key: "DATABASE_URL" },
    });
    expect(postgres.some((o) => o.kind === "PersistentVolumeClaim")).toBe(false);

    const refused = await helm(["template", "x", CHART_DIR, "--set", "keys.replicas=2"]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain("keys.replicas > 1 needs PostgreSQL");
  });

  it("rejects bad values with a message naming the value", async () => {
    const cases: [string[], string][] = [
      [["--set", "autoscaling.mode=sometimes"], "/autoscaling/mode"],
      [
        ["--set", "networks[0].name=Main_Net", "--set", "networks[0].reservedPeers[0].name=a"],
        "/networks/0/name",
      ],
      [["--set", "gateway.replicas=-1"], "/gateway/replicas"],
      [["--set", "controller.bogus=1"], "bogus"],
      // A network that names no workload: what to add, not a template crash (reflect.Value.Type on zero Value).
      [
        [
          ...["networks[0].name=a", "networks[0].preset=mainnet", "networks[0].reservedPeers[0].name=p"],
          ...["networks[0].reservedPeers[0].http=http://p:8545"],
        ].flatMap((pair) => ["--set", pair]),
        "networks[a]: enable workload, or name an existing workload in pool.workload",
      ],
      // controller-revision-hash (<StatefulSet>-<10 characters>) must fit a 63-character label value.
      [
        [
          ...[
            `networks[0].name=${"n".repeat(50)}`,
            "networks[0].chainId=7",
            "networks[0].reservedPeers[0].name=p",
          ],
          ...["networks[0].reservedPeers[0].http=http://p:8545", "networks[0].workload.enabled=true"],
          ...["networks[0].workload.image.repository=client"],
        ].flatMap((pair) => ["--set", pair]),
        "allows 52",
      ],
      // The pod must live through the shutdown delay and the drain, or the rollout drops requests after all.
      [["--set", "gateway.terminationGracePeriodSeconds=15"], "must cover gateway.shutdownDelaySeconds"],
    ];
    for (const [args, message] of cases) {
      const result = await helm(["template", "x", CHART_DIR, ...args]);
      expect(result.code, args.join(" ")).not.toBe(0);
      expect(result.stderr, args.join(" ")).toContain(message);
    }
  });

  it("renders the monitoring objects when enabled: scrape configs, rules and the Grafana dashboard", async () => {
    const { objects } = await renderChart({ values: [FULL] });
    const dashboard = find(objects, "ConfigMap", "lightfleet-dashboard");
    expect(dashboard.metadata.labels?.grafana_dashboard).toBe("1");
    expect(dashboard.metadata.namespace).toBe("monitoring");
    const json = JSON.parse((dashboard.data as Record<string, string>)["lightfleet.json"]!) as {
      uid: string;
    };
    expect(json.uid).toBe("lightfleet");
    find(objects, "ServiceMonitor", "lightfleet");
    find(objects, "PodMonitor", "lightfleet");
    find(objects, "PrometheusRule", "lightfleet");
    const { objects: fewer } = await renderChart({
      values: [FULL],
      set: ["monitoring.prometheusRule.disabledAlerts={LightfleetGatewayHighLatency}"],
    });
    const rules = JSON.stringify(find(fewer, "PrometheusRule", "lightfleet").spec);
    expect(rules).not.toContain("LightfleetGatewayHighLatency");
    expect(rules).toContain("LightfleetGatewayErrorRate");
  });

  it("isolates pods with NetworkPolicies when enabled", async () => {
    const { objects } = await renderChart({ values: [FULL] });
    const policies = objects.filter((o) => o.kind === "NetworkPolicy").map((o) => o.metadata.name);
    expect(policies.sort()).toEqual([
      "lightfleet-controller",
      "lightfleet-gateway",
      "lightfleet-gateway-redis",
      "lightfleet-keys-api",
      "lightfleet-light-node",
    ]);
    const nodes = JSON.stringify(find(objects, "NetworkPolicy", "lightfleet-light-node").spec);
    expect(nodes).toContain('"app.kubernetes.io/component":"gateway"');
    expect(nodes).toContain('"app.kubernetes.io/component":"controller"');
    // The controller scrapes the gateways' counters; helm test reaches the key API's admin port.
    type Policy = { ingress: { ports: { port: string }[]; from?: unknown[] }[] };
    const adminFrom = (name: string) =>
      JSON.stringify(
        (find(objects, "NetworkPolicy", name).spec as Policy).ingress.find(
          (r) => r.ports[0]!.port === "admin",
        )?.from,
      );
    expect(adminFrom("lightfleet-gateway")).toContain('"app.kubernetes.io/component":"controller"');
    expect(adminFrom("lightfleet-keys-api")).toContain('"app.kubernetes.io/component":"test"');
    expect(adminFrom("lightfleet-controller")).not.toContain("podSelector");
  });

  it("runs two releases side by side: each its own Lease, pool class and object names", async () => {
    const render = async (release: string, network: string) => {
      const result = await helm([
        "template",
        release,
        CHART_DIR,
        "--namespace",
        "eth",
        ...[
          `networks[0].name=${network}`,
          `networks[0].preset=${network}`,
          "networks[0].reservedPeers[0].name=full-0",
          "networks[0].reservedPeers[0].http=http://full-0:8545",
          "networks[0].workload.enabled=true",
          "networks[0].workload.image.repository=client",
        ].flatMap((pair) => ["--set", pair]),
      ]);
      expect(result.stderr).toBe("");
      return parseObjects(result.stdout);
    };
    const blue = await render("blue", "mainnet");
    const green = await render("green", "sepolia");
    const names = (objects: K8sObject[]) => objects.map((o) => `${o.kind}/${o.metadata.name}`);
    expect(names(blue).filter((n) => names(green).includes(n))).toEqual([]);
    for (const [release, objects] of [
      ["blue", blue],
      ["green", green],
    ] as const) {
      const lease = objects.find((o) => o.kind === "Lease")!;
      expect(lease.metadata.name).toBe(`${release}-lightfleet-controller`);
      // NOTES.txt's `kubectl get leases -l app.kubernetes.io/instance=<release>` finds it.
      expect(lease.metadata.labels?.["app.kubernetes.io/instance"]).toBe(release);
      const config = parse(
        (find(objects, "ConfigMap", `${release}-lightfleet-config`).data as Record<string, string>)[
          "lightfleet.yaml"
        ]!,
      ) as { controller: { poolSelector: string; lease: { name: string } } };
      expect(config.controller.lease.name).toBe(lease.metadata.name);
      expect(config.controller.poolSelector).toBe(`lightfleet.io/class=${release}-lightfleet`);
      const pool = objects.find((o) => o.kind === "LightNodePool")!;
      expect(pool.metadata.labels?.["lightfleet.io/class"]).toBe(`${release}-lightfleet`);
    }
  });

  it("gives every lightfleet container measured resource requests and startup, liveness and readiness probes, each configurable", async () => {
    const { objects } = await renderChart();
    type Probed = Container & {
      startupProbe?: { httpGet: { path: string }; failureThreshold: number };
      livenessProbe?: { periodSeconds: number };
      readinessProbe?: { periodSeconds: number };
      resources?: { requests?: { cpu?: string; memory?: string } };
    };
    for (const name of ["controller", "gateway", "keys"]) {
      const container = podSpec(find(objects, "Deployment", `lightfleet-${name}`))!.containers[0] as Probed;
      expect(container.resources?.requests?.cpu, name).toBeDefined();
      expect(container.resources?.requests?.memory, name).toBeDefined();
      expect(container.startupProbe?.httpGet.path, name).toBe("/healthz");
      expect(container.livenessProbe, name).toBeDefined();
      expect(container.readinessProbe, name).toBeDefined();
    }
    const { objects: tuned } = await renderChart({
      set: ["probes.startup.failureThreshold=90", "gateway.probes.readiness.periodSeconds=2"],
    });
    const gateway = podSpec(find(tuned, "Deployment", "lightfleet-gateway"))!.containers[0] as Probed;
    const keys = podSpec(find(tuned, "Deployment", "lightfleet-keys"))!.containers[0] as Probed;
    expect(gateway.startupProbe?.failureThreshold).toBe(90);
    expect(keys.startupProbe?.failureThreshold).toBe(90);
    expect(gateway.readinessProbe?.periodSeconds).toBe(2);
    expect(keys.readinessProbe?.periodSeconds).toBe(5);
  });

  it("keeps replicas of the controller and of a shared key API on different nodes and under a PodDisruptionBudget", async () => {
    const { objects } = await renderChart({ values: ["charts/lightfleet/examples/production-values.yaml"] });
    const controller = find(objects, "Deployment", "lightfleet-controller");
    const anti = JSON.stringify(
      (controller.spec as { template: { spec: { affinity?: unknown } } }).template.spec.affinity,
    );
    expect(anti).toContain("podAntiAffinity");
    expect(anti).toContain("kubernetes.io/hostname");
    expect(anti).toContain('"app.kubernetes.io/component":"controller"');
    const keys = find(objects, "Deployment", "lightfleet-keys");
    const spread = JSON.stringify(
      (keys.spec as { template: { spec: { topologySpreadConstraints?: unknown } } }).template.spec
        .topologySpreadConstraints,
    );
    expect(spread).toContain("kubernetes.io/hostname");
    expect(spread).toContain('"app.kubernetes.io/component":"keys-api"');
    const pdb = find(objects, "PodDisruptionBudget", "lightfleet-keys");
    expect(JSON.stringify(pdb.spec)).toContain('"app.kubernetes.io/component":"keys-api"');
    // One SQLite replica: no PDB (it would block every node drain).
    expect(
      (await renderChart()).objects.some(
        (o) => o.kind === "PodDisruptionBudget" && o.metadata.name === "lightfleet-keys",
      ),
    ).toBe(false);
  });

  it("documents a CRD upgrade path that applies exactly the CRDs this chart version ships", async () => {
    // Helm installs crds/ once and never upgrades them; docs/helm.md tells operators to apply them before upgrading.
    const shown = await helm(["show", "crds", CHART_DIR]);
    expect(shown.code).toBe(0);
    const shownCrds = parseObjects(shown.stdout).map((o) => JSON.stringify(o));
    const files = (await loadCrds()).map((c) => JSON.stringify(c));
    expect(shownCrds.sort()).toEqual(files.sort());
    const docs = await readFile(join(CHART_DIR, "../../docs/helm.md"), "utf8");
    const upgrading = docs.slice(
      docs.indexOf("## Upgrading"),
      docs.indexOf("\n## ", docs.indexOf("## Upgrading") + 1),
    );
    expect(upgrading).toContain("kubectl apply --server-side --force-conflicts -f charts/lightfleet/crds/");
    expect(upgrading).toMatch(
      /helm show crds \S+ --version \S+ \| kubectl apply --server-side --force-conflicts -f -/,
    );
  });
});
