import { createServer, type Server } from "node:http";
import { connect, type AddressInfo } from "node:net";
import { once } from "node:events";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../../src/process/freePort.js";
import { startFakeApiServer, type FakeApiServer } from "../support/fakeApiServer.js";
import { runNodeScript } from "../support/runCli.js";
import { clusterDnsModule, startServiceProxy, type ServiceProxy } from "../support/kube/serviceProxy.js";

/**
 * The real Kubernetes tier's stand-ins for cluster DNS and kube-proxy (test/support/kube/serviceProxy.ts), held here
 * against the simulated API server: a ClusterIP on loopback (127.0.0.0/8 is local already, so nothing is added).
 */
const CLUSTER_IP = "127.0.0.61";

/** Runs a script as a pod's node would, with the DNS stand-in; its exit code and output. */
const runScript = (hosts: Record<string, string>, script: string) =>
  runNodeScript(["--import", clusterDnsModule(hosts), "--input-type=module", "-e", script], {
    timeoutMs: 20_000,
  });

describe("Service proxy and cluster DNS stand-ins", () => {
  let api: FakeApiServer;
  let proxy: ServiceProxy;
  const backends: Server[] = [];
  let servicePort: number;

  const backend = async (body: string) => {
    const server = createServer((_req, res) => res.end(body));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    backends.push(server);
    return (server.address() as AddressInfo).port;
  };
  /** The Service's one EndpointSlice: one endpoint on 127.0.0.1, its port named as the Service's. */
  const slice = (port: number, ready: boolean) => ({
    apiVersion: "discovery.k8s.io/v1",
    kind: "EndpointSlice",
    metadata: { name: "gw-x1", namespace: "rpc", labels: { "kubernetes.io/service-name": "gw" } },
    addressType: "IPv4",
    ports: [{ name: "rpc", port, protocol: "TCP" }],
    endpoints: [{ addresses: ["127.0.0.1"], conditions: { ready } }],
  });

  beforeAll(async () => {
    api = await startFakeApiServer();
    servicePort = await freePort();
    api.put("api/v1/services", {
      apiVersion: "v1",
      kind: "Service",
      metadata: { name: "gw", namespace: "rpc" },
      spec: {
        clusterIP: CLUSTER_IP,
        ports: [{ name: "rpc", port: servicePort, targetPort: "rpc", protocol: "TCP" }],
      },
    });
    proxy = startServiceProxy({ kubeConfig: api.kubeConfig(), addAddress: () => Promise.resolve() });
  });
  afterAll(async () => {
    await proxy?.stop();
    await Promise.all(backends.map((s) => new Promise((resolve) => s.close(resolve))));
    await api?.close();
  });

  it("resolves a Service's names to its ClusterIP and carries a connection to a ready endpoint's port", async () => {
    const ready = await backend("ready");
    api.put("apis/discovery.k8s.io/v1/endpointslices", slice(ready, true));
    const hosts = await proxy.sync("rpc");
    expect(hosts).toMatchObject({
      gw: CLUSTER_IP,
      "gw.rpc": CLUSTER_IP,
      "gw.rpc.svc": CLUSTER_IP,
      "gw.rpc.svc.cluster.local": CLUSTER_IP,
    });
    expect(await proxy.sync("other")).not.toHaveProperty("gw"); // the short name is the pod's own namespace's only
    const run = await runScript(
      hosts,
      `for (const host of ["gw", "gw.rpc.svc.cluster.local"])
         console.log(host, await (await fetch("http://" + host + ":${servicePort}/")).text());`,
    );
    expect(run.output).toBe("gw ready\ngw.rpc.svc.cluster.local ready\n");
    expect(run.code).toBe(0);
  });

  it("with no ready endpoint, resets the connection once the request has arrived, never before", async () => {
    const unready = await backend("unready");
    api.put("apis/discovery.k8s.io/v1/endpointslices", slice(unready, false));
    await proxy.sync("rpc");
    // A reset in the moment between connect and the request's first bytes can leave Node 20's fetch waiting
    // forever (the process then exits 13 with no word); the stand-in resets only a connection that has spoken.
    const socket = connect(servicePort, CLUSTER_IP);
    socket.on("error", () => undefined);
    await once(socket, "connect");
    const closed = new Promise((resolve) => socket.once("close", resolve));
    const before = await Promise.race([
      closed.then(() => "closed before the request"),
      new Promise((resolve) => setTimeout(resolve, 300, "open")),
    ]);
    expect(before).toBe("open");
    const error = new Promise<NodeJS.ErrnoException>((resolve) => socket.once("error", resolve));
    let received = "";
    socket.on("data", (chunk: Buffer) => (received += chunk.toString()));
    socket.write("GET / HTTP/1.1\r\nhost: gw\r\n\r\n");
    expect((await error).code).toBe("ECONNRESET");
    await closed;
    expect(received).toBe("");
  });

  it("resets the connection when the Service has no ready endpoint, so the caller fails", async () => {
    const unready = await backend("unready");
    api.put("apis/discovery.k8s.io/v1/endpointslices", slice(unready, false));
    const run = await runScript(await proxy.sync("rpc"), `await fetch("http://gw:${servicePort}/");`);
    expect(run.code).toBe(1);
    expect(run.output).toMatch(/fetch failed/);
    expect(run.output).not.toContain("unready");
  });
});
