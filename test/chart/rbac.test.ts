import { CoordinationV1Api, KubeConfig } from "@kubernetes/client-node";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import nock from "nock";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config/loadConfig.js";
import { startClusterController } from "../../src/kubernetes/controller/clusterController.js";
import { EndpointSliceSource } from "../../src/kubernetes/endpointSlices/endpointSliceSource.js";
import { EventRecorder } from "../../src/kubernetes/status/eventRecorder.js";
import { KubernetesFleet } from "../../src/kubernetes/pods/kubernetesFleet.js";
import { LeaderElector } from "../../src/kubernetes/leaderElection/leaderElector.js";
import { StatusWriter } from "../../src/kubernetes/status/statusWriter.js";
import type { EngineOutput } from "../../src/health/types.js";
import { silentLogger } from "../../src/log/logger.js";
import { createRegistry } from "../../src/metrics/registry.js";
import { listAutoscalers } from "../../src/kubernetes/scaling/listAutoscalers.js";
import { renderChart } from "../support/helm.js";
import { ROOT } from "../support/runCli.js";
import { waitFor } from "../support/waitFor.js";

const SERVER = "https://rbac.test:6443";

/** "group|resource|verb" of an API request, as RBAC sees it. */
function permission(method: string, url: URL): string {
  const parts = url.pathname.split("/").filter(Boolean);
  const [group, rest] = parts[0] === "api" ? ["", parts.slice(2)] : [parts[1]!, parts.slice(3)];
  const scoped = rest[0] === "namespaces" ? rest.slice(2) : rest;
  const [resource, name, sub] = scoped;
  const verb =
    method === "GET"
      ? name
        ? "get"
        : url.searchParams.get("watch") === "true"
          ? "watch"
          : "list"
      : ({ POST: "create", PUT: "update", PATCH: "patch", DELETE: "delete" } as Record<string, string>)[
          method
        ]!;
  // POST to a named object's subresource (pods/eviction) creates that subresource.
  return `${group}|${sub ? `${resource}/${sub}` : resource}|${verb}`;
}

describe("the chart's RBAC against the calls the code makes", () => {
  const controllerCalls = new Set<string>();
  const gatewayCalls = new Set<string>();
  let calls = controllerCalls;
  let kubeConfig: KubeConfig;

  beforeAll(async () => {
    kubeConfig = new KubeConfig();
    kubeConfig.loadFromOptions({
      clusters: [{ name: "t", server: SERVER, skipTLSVerify: true }],
      users: [{ name: "t", token: "t" }],
      contexts: [{ name: "t", cluster: "t", user: "t" }],
      currentContext: "t",
    });
    nock.disableNetConnect();
    nock.enableNetConnect("127.0.0.1");
    let leaseTaken = false;
    // The Lease was deleted (by hand, or with its namespace's objects): the controller creates it again.
    let leaseExists = false;
    // Answers every call with something plausible and records the permission it needs.
    const pod = {
      metadata: { name: "light-0", namespace: "eth", uid: "u" },
      spec: { containers: [], readinessGates: [{ conditionType: "lightfleet.io/in-sync" }] },
      status: { podIP: "10.0.0.1" },
    };
    const answer = (method: string) =>
      function (this: { req: { path: string } }, uri: string) {
        const url = new URL(uri, SERVER);
        calls.add(permission(method, url));
        // The chart creates the Lease; the controller reads it, takes it and renews it, and creates it again when
        // it is gone.
        if (url.pathname.endsWith("/leases/lightfleet-controller") && method === "GET" && !leaseExists)
          return [404, { kind: "Status", code: 404, reason: "NotFound" }];
        if (url.pathname.endsWith("/leases") && method === "POST") {
          leaseExists = true;
          return [409, { kind: "Status", code: 409, reason: "AlreadyExists" }];
        }
        if (url.pathname.endsWith("/leases/lightfleet-controller") && method === "GET")
          return [
            200,
            {
              metadata: { name: "lightfleet-controller", resourceVersion: "3" },
              spec: leaseTaken ? { holderIdentity: "c-0", leaseDurationSeconds: 15 } : {},
            },
          ];
        if (url.pathname.endsWith("/leases/lightfleet-controller") && method === "PUT") leaseTaken = true;
        // Watches stay open until the test is done with them.
        if (url.searchParams.get("watch") === "true") return new Promise(() => {});
        if (url.pathname.endsWith("/pods"))
          return [200, { metadata: { resourceVersion: "1" }, items: [pod] }];
        if (method === "GET") return [200, { metadata: {}, items: [] }];
        if (url.pathname.endsWith("/status") && url.pathname.includes("/pods/")) return [200, pod];
        return [method === "POST" ? 201 : 200, { metadata: { name: "x", resourceVersion: "2" } }];
      };
    for (const method of ["GET", "POST", "PUT", "PATCH", "DELETE"] as const) {
      const scope = nock(SERVER).persist();
      const path = /.*/;
      if (method === "GET") scope.get(path).query(true).reply(answer("GET"));
      if (method === "POST") scope.post(path).reply(answer("POST"));
      if (method === "PUT") scope.put(path).reply(answer("PUT"));
      if (method === "PATCH") scope.patch(path).reply(answer("PATCH"));
      if (method === "DELETE") scope.delete(path).reply(answer("DELETE"));
    }

    // Every code path that talks to the API: pools, pods (list, watch, readiness, eviction, scale of both kinds),
    // LightNodes and their status, pool status, Events, the Lease, and the autoscaler conflict check.
    // The running controller: pools followed by list + watch, the gateway pods found for the autoscaler.
    const running = startClusterController({
      config: parseConfig({ controller: { namespace: "eth", gatewayService: { name: "gw" } } }, "test", {}),
      kubeConfig,
      registry: createRegistry({ defaultMetrics: false }),
      logger: silentLogger(),
      identity: "c-0",
      leaseNamespace: "eth",
    });
    await running.ready;
    await waitFor(() =>
      ["lightnodepools|watch", "endpointslices|watch"].every((c) => [...calls].some((k) => k.endsWith(c))),
    );
    await running.stop();
    for (const kind of ["StatefulSet", "Deployment"] as const) {
      const fleet = new KubernetesFleet({ kubeConfig, pools: [], logger: silentLogger() });
      fleet.start();
      await fleet.setPools([
        {
          key: "mainnet",
          network: "mainnet",
          namespace: "eth",
          labelSelector: "app=light",
          rpcPort: 8545,
          workload: { kind, name: "light" },
        },
      ]);
      await waitFor(() => fleet.members("mainnet").length === 1);
      await fleet.setRouted("mainnet", "light-0", true);
      await fleet.restart("mainnet", "light-0", "stall");
      await fleet.replicas("mainnet");
      await fleet.scale("mainnet", 3);
      const writer = new StatusWriter(kubeConfig, {
        pools: () =>
          new Map([
            [
              "mainnet",
              { key: "mainnet", network: "mainnet", namespace: "eth", name: "mainnet", generation: 1 },
            ],
          ]),
        fleet,
        logger: silentLogger(),
        events: new EventRecorder(kubeConfig, { identity: "c-0", logger: silentLogger() }),
      });
      const output = {
        state: {},
        nodes: [{ name: "light-0", state: "Lagging", routed: false, message: "behind", since: Date.now() }],
        decisions: [
          { kind: "transition", node: "light-0", from: "Healthy", to: "Lagging", message: "behind" },
        ],
      } as unknown as EngineOutput;
      await writer.onRound("mainnet", output);
      fleet.stop();
    }
    const elector = new LeaderElector({
      api: kubeConfig.makeApiClient(CoordinationV1Api),
      namespace: "eth",
      name: "lightfleet-controller",
      identity: "c-0",
      logger: silentLogger(),
      retryPeriodMs: 60_000,
    });
    elector.start();
    await waitFor(() => elector.isLeader());
    await elector.stop(); // reads the Lease back and gives it up
    await listAutoscalers(kubeConfig, "eth");

    // The gateway in a cluster: each pool Service's EndpointSlices.
    calls = gatewayCalls;
    const slices = new EndpointSliceSource({
      kubeConfig,
      services: [{ network: "mainnet", namespace: "eth", service: "light-mainnet" }],
      logger: silentLogger(),
    });
    await waitFor(() => gatewayCalls.has("discovery.k8s.io|endpointslices|watch"));
    await slices.close();
  });

  afterAll(() => {
    nock.cleanAll();
    nock.enableNetConnect();
  });

  const granted = (role: { rules: Array<{ apiGroups: string[]; resources: string[]; verbs: string[] }> }) => {
    const set = new Set<string>();
    for (const rule of role.rules)
      for (const group of rule.apiGroups)
        for (const resource of rule.resources)
          for (const verb of rule.verbs) set.add(`${group}|${resource}|${verb}`);
    return set;
  };
  type Rule = { apiGroups: string[]; resources: string[]; verbs: string[]; resourceNames?: string[] };
  type Role = { kind: string; metadata: { name: string; namespace?: string }; rules: Rule[] };
  /** Every Role and ClusterRole of a component, found by its component label. */
  const rolesOf = (objects: Array<Record<string, unknown>>, component: string) =>
    objects.filter(
      (o) =>
        (o.kind === "Role" || o.kind === "ClusterRole") &&
        (o.metadata as { labels?: Record<string, string> }).labels?.["app.kubernetes.io/component"] ===
          component,
    ) as unknown as Role[];
  const roleOf = (objects: Array<Record<string, unknown>>, component: string) => {
    const roles = rolesOf(objects, component);
    return roles.length ? { rules: roles.flatMap((r) => r.rules) } : undefined;
  };

  it("grants the controller and the gateway every call each makes, and nothing more", async () => {
    const { objects } = await renderChart();
    for (const [component, made] of [
      ["controller", controllerCalls],
      ["gateway", gatewayCalls],
    ] as const) {
      const rules = granted(roleOf(objects, component)!);
      expect(
        [...made].filter((c) => !rules.has(c)).sort(),
        `${component}: calls the chart does not grant`,
      ).toEqual([]);
      expect([...rules].filter((g) => !made.has(g)).sort(), `${component}: grants no call needs`).toEqual([]);
    }
    expect(controllerCalls.size).toBeGreaterThan(10);
  });

  it("gives the gateway no Role and no token when it reaches the pools through their Services' addresses", async () => {
    const account = (objects: Array<Record<string, unknown>>) =>
      objects.find(
        (o) => o.kind === "ServiceAccount" && (o.metadata as { name: string }).name.endsWith("-gateway"),
      )!;
    const { objects } = await renderChart({ set: ["gateway.upstreamDiscovery=service"] });
    expect(roleOf(objects, "gateway")).toBeUndefined();
    expect(roleOf(objects, "controller")).toBeDefined();
    // Nor an API token.
    expect(account(objects).automountServiceAccountToken).toBe(false);
    expect(account((await renderChart()).objects).automountServiceAccountToken).toBeUndefined();
  });

  it("keeps leader election to the release's own Lease, and EndpointSlices to the namespaces watched, even cluster-wide", async () => {
    for (const set of [[], ["rbac.clusterWide=true"]]) {
      const { objects } = await renderChart({ set });
      const all = [...rolesOf(objects, "controller"), ...rolesOf(objects, "gateway")];
      for (const role of all.filter((r) => r.kind === "ClusterRole")) {
        const resources = role.rules.flatMap((r) => r.resources);
        expect(resources, `${role.metadata.name} ${set.join()}`).not.toContain("leases");
        expect(resources, `${role.metadata.name} ${set.join()}`).not.toContain("endpointslices");
      }
      const leaseRules = all.flatMap((r) => r.rules).filter((r) => r.resources.includes("leases"));
      expect(leaseRules).toEqual([
        {
          apiGroups: ["coordination.k8s.io"],
          resources: ["leases"],
          resourceNames: ["lightfleet-controller"],
          verbs: ["get", "update"],
        },
        // A create carries no name RBAC could check: this rule alone is namespace-wide, in the release namespace.
        { apiGroups: ["coordination.k8s.io"], resources: ["leases"], verbs: ["create"] },
      ]);
      // Only namespaced Roles in the release namespace hold them.
      for (const role of all.filter((r) =>
        r.rules.some((x) => /leases|endpointslices/.test(x.resources.join())),
      ))
        expect([role.kind, role.metadata.namespace]).toEqual(["Role", "lightfleet"]);
      expect(rolesOf(objects, "gateway").map((r) => r.kind)).toEqual(["Role"]);
    }
  });

  it("is listed in docs/helm.md exactly as the chart renders it", async () => {
    const { objects } = await renderChart();
    const rendered = new Set<string>();
    for (const component of ["controller", "gateway"])
      for (const rule of roleOf(objects, component)!.rules)
        for (const resource of rule.resources)
          rendered.add(`${component} ${rule.apiGroups[0] || "core"} ${resource} ${rule.verbs.join(",")}`);
    const docs = await readFile(join(ROOT, "docs/helm.md"), "utf8");
    const documented = new Set(
      [...docs.matchAll(/^\s*\| (controller|gateway) \| `([^`]+)` \| `([^`]+)` \| ([^|]+) \|/gm)].map(
        ([, component, group, resource, verbs]) =>
          `${component} ${group} ${resource} ${[...verbs!.matchAll(/`([a-z]+)`/g)].map((m) => m[1]).join(",")}`,
      ),
    );
    expect(documented.size).toBeGreaterThan(10);
    expect([...documented].sort()).toEqual([...rendered].sort());
  });
});
