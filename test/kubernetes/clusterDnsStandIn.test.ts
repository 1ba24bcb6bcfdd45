import { Resolver } from "node:dns/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startClusterDns, type ClusterDns } from "../support/kube/clusterDns.js";

/**
 * The real kubelet tier's cluster DNS stand-in (test/support/kube/clusterDns.ts), asked over UDP by Node's own DNS
 * client as a pod's resolver would ask it: on an ephemeral port of 127.0.0.1 here (the tier gives it port 53 of the
 * bridge's host address).
 */
describe("cluster DNS stand-in", () => {
  let dns: ClusterDns;
  let resolver: Resolver;
  const services: Record<string, string> = { "gateway.rpc.svc.cluster.local": "10.216.7.20" };

  beforeAll(async () => {
    dns = await startClusterDns({
      address: "127.0.0.1",
      port: 0,
      domain: "cluster.local",
      resolve: async (name) => {
        if (name === "broken.rpc.svc.cluster.local") throw new Error("the API could not be read");
        return services[name];
      },
    });
    resolver = new Resolver({ timeout: 2_000, tries: 1 });
    resolver.setServers([`127.0.0.1:${dns.port}`]);
  });
  afterAll(() => dns?.stop());

  it("answers a Service's name with its ClusterIP, whatever its case, and records it", async () => {
    expect(await resolver.resolve4("gateway.rpc.svc.cluster.local")).toEqual(["10.216.7.20"]);
    expect(await resolver.resolve4("Gateway.RPC.svc.cluster.local")).toEqual(["10.216.7.20"]);
    expect(dns.answered()).toContain("gateway.rpc.svc.cluster.local");
  });

  it("gives an empty answer (not an error) for AAAA of a known name, as for a Service without IPv6", async () => {
    await expect(resolver.resolve6("gateway.rpc.svc.cluster.local")).rejects.toMatchObject({
      code: "ENODATA",
    });
  });

  it("says NXDOMAIN for an unknown name of the cluster domain, so the resolver tries its next search domain", async () => {
    await expect(resolver.resolve4("missing.rpc.svc.cluster.local")).rejects.toMatchObject({
      code: "ENOTFOUND",
    });
  });

  it("refuses names outside the cluster domain (nothing is forwarded off the machine) and fails on an unreadable API", async () => {
    await expect(resolver.resolve4("example.org")).rejects.toMatchObject({ code: "EREFUSED" });
    await expect(resolver.resolve4("broken.rpc.svc.cluster.local")).rejects.toMatchObject({
      code: "ESERVFAIL",
    });
  });
});
