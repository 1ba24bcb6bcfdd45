import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { CHART_DIR, helm, renderChart } from "../support/helm.js";

/** Values changes as an operator makes them: what the chart says and renders for each. */
const NETWORK = [
  "networks[0].name=mainnet",
  "networks[0].preset=mainnet",
  "networks[0].reservedPeers[0].name=full-0",
  "networks[0].reservedPeers[0].http=http://full-0:8545",
  "networks[0].workload.enabled=true",
  "networks[0].workload.image.repository=example.org/light",
];

/** NOTES.txt as `helm install` prints it (a client-side dry run: no cluster). */
async function notes(set: string[]): Promise<string> {
  const args = ["install", "lf", CHART_DIR, "--dry-run=client", "--namespace", "rpc"];
  for (const pair of [...NETWORK, ...set]) args.push("--set", pair);
  const result = await helm(args);
  expect(result.stderr).toBe("");
  expect(result.code).toBe(0);
  return result.stdout.slice(result.stdout.indexOf("NOTES:"));
}

/** The config checksum on each lightfleet component's pod template (a change rolls that component's pods). */
async function checksums(set: string[]): Promise<Record<string, string>> {
  const { objects } = await renderChart({ set: [...NETWORK, ...set] });
  const out: Record<string, string> = {};
  for (const o of objects) {
    if (o.kind !== "Deployment") continue;
    // The bundled Redis (gateway.sharedState) reads no lightfleet config.
    if (o.metadata.labels?.["app.kubernetes.io/component"] === "gateway-redis") continue;
    const template = (
      o as unknown as { spec: { template: { metadata: { annotations?: Record<string, string> } } } }
    ).spec.template;
    const component = o.metadata.labels?.["app.kubernetes.io/component"] ?? o.metadata.name;
    out[component] = template.metadata.annotations?.["checksum/config"] ?? "";
  }
  return out;
}

/** Which components' pods a values change rolls. */
async function rolled(change: string[]): Promise<string[]> {
  const before = await checksums([]);
  const after = await checksums(change);
  expect(Object.keys(before).sort()).toEqual(["controller", "gateway", "keys-api"]);
  return Object.keys(before)
    .filter((c) => before[c] !== after[c])
    .sort();
}

describe("operating the chart", () => {
  it("rolls only the components whose own config a values change touches", async () => {
    // A health tweak reaches the controller through the LightNodePool, not its config file: no pod restarts but
    // the gateway's (which reads the networks), and never the key API or the leader.
    expect(await rolled(["networks[0].health.maxLagBlocks=5"])).toEqual(["gateway"]);
    expect(await rolled(["config.keys.auditRetentionDays=30"])).toEqual(["keys-api"]);
    expect(await rolled(["config.log.level=debug"])).toEqual(["controller", "gateway", "keys-api"]);
    expect(await rolled(["config.controller.lease.name=other"])).toEqual(["controller"]);
  });

  it("names its ClusterRoles per namespace: one release name in two namespaces, cluster-wide, does not clash", async () => {
    const clusterScoped = async (namespace: string) => {
      const { objects } = await renderChart({
        set: ["rbac.clusterWide=true"],
        extraArgs: ["--namespace", namespace],
      });
      return objects
        .filter((o) => o.kind === "ClusterRole" || o.kind === "ClusterRoleBinding")
        .map((o) => `${o.kind}/${o.metadata.name}`);
    };
    const first = await clusterScoped("eth-a");
    const second = await clusterScoped("eth-b");
    expect(first.length).toBeGreaterThan(0);
    expect(first.filter((name) => second.includes(name))).toEqual([]);
  });

  it("puts commonLabels on every pod template too, merged under each component's podLabels", async () => {
    const { objects } = await renderChart({
      set: [...NETWORK, "commonLabels.team=rpc", "controller.podLabels.team=control"],
    });
    const templates = objects.filter((o) => o.kind === "Deployment" || o.kind === "StatefulSet");
    // controller, gateway, key API, the gateway's bundled Redis, and the light nodes.
    expect(templates.map((o) => o.kind).sort()).toEqual([
      "Deployment",
      "Deployment",
      "Deployment",
      "Deployment",
      "StatefulSet",
    ]);
    for (const o of templates) {
      const labels = (
        o as unknown as { spec: { template: { metadata: { labels: Record<string, string> } } } }
      ).spec.template.metadata.labels;
      const component = o.metadata.labels?.["app.kubernetes.io/component"];
      expect({ component, team: labels.team }).toEqual({
        component,
        team: component === "controller" ? "control" : "rpc",
      });
    }
  });

  it("trusts one proxy for the key API when the chart's own ingress fronts it, unless the values say otherwise", async () => {
    const trustProxy = async (set: string[]) => {
      const { objects } = await renderChart({ set });
      const config = objects.find((o) => o.kind === "ConfigMap" && o.metadata.name.endsWith("-config"));
      const text = (config as unknown as { data: Record<string, string> }).data["lightfleet.yaml"]!;
      return (parse(text) as { keys: { trustProxy?: number } }).keys.trustProxy;
    };
    const ingress = ["keys.ingress.enabled=true", "keys.ingress.host=keys.example.org"];
    expect(await trustProxy(ingress)).toBe(1);
    expect(await trustProxy([])).toBeUndefined();
    expect(await trustProxy([...ingress, "config.keys.trustProxy=2"])).toBe(2);
  });

  it("gives light-node containers probes, resource requests (not BestEffort) and an optional priority class", async () => {
    const podSpec = async (set: string[]) => {
      const { objects } = await renderChart({ set: [...NETWORK, ...set] });
      const sts = objects.find((o) => o.kind === "StatefulSet")!;
      return (sts as unknown as { spec: { template: { spec: Record<string, unknown> } } }).spec.template.spec;
    };
    const byDefault = await podSpec([]);
    const [container] = byDefault.containers as Array<Record<string, Record<string, unknown>>>;
    expect(container!.startupProbe).toMatchObject({ tcpSocket: { port: "http" } });
    expect(container!.livenessProbe).toMatchObject({ tcpSocket: { port: "http" } });
    expect(container!.resources!.requests).toMatchObject({
      cpu: expect.any(String),
      memory: expect.any(String),
    });
    expect(byDefault.priorityClassName).toBeUndefined();
    const tuned = await podSpec([
      "networks[0].workload.priorityClassName=rpc-critical",
      "networks[0].workload.probes.liveness=null",
    ]);
    expect(tuned.priorityClassName).toBe("rpc-critical");
    const [tunedContainer] = tuned.containers as Array<Record<string, unknown>>;
    expect(tunedContainer!.livenessProbe).toBeUndefined();
    expect(tunedContainer!.startupProbe).toBeDefined();
  });

  it("keeps the admin port (/metrics) off the public gateway Service, on a ClusterIP Service the controller scrapes", async () => {
    const { objects } = await renderChart({ set: [...NETWORK, "gateway.service.type=LoadBalancer"] });
    type Service = { metadata: { name: string }; spec: { type?: string; ports: Array<{ name: string }> } };
    const services = objects.filter((o) => o.kind === "Service") as unknown as Service[];
    const gateway = services.find((svc) => svc.metadata.name === "lightfleet-gateway")!;
    expect(gateway.spec.type).toBe("LoadBalancer");
    expect(gateway.spec.ports.map((p) => p.name)).toEqual(["rpc"]);
    const admin = services.find((svc) => svc.metadata.name === "lightfleet-gateway-admin")!;
    expect(admin.spec.type ?? "ClusterIP").toBe("ClusterIP");
    expect(admin.spec.ports.map((p) => p.name)).toEqual(["admin"]);
    const config = objects.find((o) => o.kind === "ConfigMap" && o.metadata.name.endsWith("-config"));
    const text = (config as unknown as { data: Record<string, string> }).data["lightfleet.yaml"]!;
    expect(
      (parse(text) as { controller: { gatewayService: unknown } }).controller.gatewayService,
    ).toMatchObject({
      name: "lightfleet-gateway-admin",
      port: "admin",
    });
  });

  it("warns that a network's workload.replicas is not used while an autoscaler owns the size", async () => {
    const warning =
      /WARNING: networks\[mainnet\]\.workload\.replicas is not used: autoscaling\.mode is controller/;
    expect(await notes(["networks[0].workload.replicas=3"])).toMatch(warning);
    expect(await notes([])).not.toMatch(/WARNING/);
    expect(await notes(["networks[0].workload.replicas=3", "autoscaling.mode=off"])).not.toMatch(/WARNING/);
  });
});
