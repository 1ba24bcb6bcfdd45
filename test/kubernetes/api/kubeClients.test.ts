import { execFileSync } from "node:child_process";
import { createRequire } from "node:module";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TLSSocket } from "node:tls";
import {
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  PatchStrategy,
  setHeaderOptions,
} from "@kubernetes/client-node";
import { afterEach, describe, expect, it } from "vitest";
import { makeApiClient } from "../../../src/kubernetes/api/kubeClients.js";
import { startFakeApiServer } from "../../support/fakeApiServer.js";
import { findTool } from "../../support/requireTool.js";

const { version } = createRequire(import.meta.url)("../../../package.json") as { version: string };
const PODS = "api/v1/pods";
const POOLS = "apis/lightfleet.io/v1alpha1/lightnodepools";
const CALLS = 12;

const cleanup: Array<() => unknown> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "lightfleet-kubeclients-"));
  cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A kubeconfig whose user runs an exec plugin handing out token-1, token-2, ..., each expired on arrival. */
function execKubeConfig(server: string): KubeConfig {
  const dir = tempDir();
  const counter = join(dir, "count");
  writeFileSync(counter, "0");
  const plugin = join(dir, "plugin.cjs");
  writeFileSync(
    plugin,
    `const fs = require("node:fs");
     const n = Number(fs.readFileSync(${JSON.stringify(counter)}, "utf8")) + 1;
     fs.writeFileSync(${JSON.stringify(counter)}, String(n));
     process.stdout.write(JSON.stringify({
       apiVersion: "client.authentication.k8s.io/v1", kind: "ExecCredential",
       status: { token: "token-" + n, expirationTimestamp: "2000-01-01T00:00:00Z" },
     }));`,
  );
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromOptions({
    clusters: [{ name: "fake", server, skipTLSVerify: true }],
    users: [
      {
        name: "fake",
        exec: { apiVersion: "client.authentication.k8s.io/v1", command: process.execPath, args: [plugin] },
      },
    ],
    contexts: [{ name: "fake", cluster: "fake", user: "fake", namespace: "eth" }],
    currentContext: "fake",
  });
  return kubeConfig;
}

/** Reads a pod and writes a pool's status, one call after the other, as the controller's clients do. */
async function podReadsAndStatusWrites(core: CoreV1Api, custom: CustomObjectsApi): Promise<void> {
  for (let i = 0; i < CALLS / 2; i++) {
    await core.readNamespacedPod({ name: "light-0", namespace: "eth" });
    // A merge patch, as the status writer sends (the client's default, a JSON Patch, wants a list of operations).
    await custom.patchNamespacedCustomObjectStatus(
      {
        group: "lightfleet.io",
        version: "v1alpha1",
        namespace: "eth",
        plural: "lightnodepools",
        name: "mainnet",
        body: { status: { observedGeneration: i } },
      },
      setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
    );
  }
}

describe("API clients at the wire", () => {
  it("send the controller's calls over one kept-alive connection, each call authenticated afresh", async () => {
    const api = await startFakeApiServer();
    cleanup.push(() => api.close());
    api.put(PODS, { apiVersion: "v1", kind: "Pod", metadata: { name: "light-0", namespace: "eth" } });
    api.put(POOLS, {
      apiVersion: "lightfleet.io/v1alpha1",
      kind: "LightNodePool",
      metadata: { name: "mainnet", namespace: "eth" },
      spec: {
        network: "mainnet",
        chainId: 1,
        workloadRef: { kind: "StatefulSet", name: "light" },
        selector: { matchLabels: { app: "light" } },
        reservedPeers: [{ http: "http://full-0:8545" }],
      },
    });
    const kubeConfig = execKubeConfig(api.url);

    // Two clients of one KubeConfig: they share the connection.
    await podReadsAndStatusWrites(
      makeApiClient(kubeConfig, CoreV1Api),
      makeApiClient(kubeConfig, CustomObjectsApi),
    );
    expect(api.calls).toHaveLength(CALLS);
    expect(api.connections()).toBe(1);
    expect(new Set(api.calls.map((c) => c.connection))).toEqual(new Set([1]));
    // The exec plugin ran for every call and its token went with it, on the same connection.
    expect(api.calls.map((c) => c.authorization)).toEqual(
      Array.from({ length: CALLS }, (_, i) => `Bearer token-${i + 1}`),
    );
    expect(api.get(POOLS, "eth", "mainnet")?.status).toEqual({ observedGeneration: CALLS / 2 - 1 });
    // Each call names lightfleet and its version: what a real API server records as the field manager of a write
    // (managedFields), and what its audit log shows as the caller's user agent.
    expect(new Set(api.calls.map((c) => c.userAgent))).toEqual(new Set([`lightfleet/${version}`]));

    // What client-node 1.4 does by itself: a connection per call.
    await podReadsAndStatusWrites(
      kubeConfig.makeApiClient(CoreV1Api),
      kubeConfig.makeApiClient(CustomObjectsApi),
    );
    expect(api.connections()).toBe(1 + CALLS);
  });

  it("keep calls that overlap on a few connections and reuse them for the next round", async () => {
    const api = await startFakeApiServer();
    cleanup.push(() => api.close());
    api.put(PODS, { apiVersion: "v1", kind: "Pod", metadata: { name: "light-0", namespace: "eth" } });
    const core = makeApiClient(api.kubeConfig(), CoreV1Api);
    const round = () =>
      Promise.all(
        Array.from({ length: 4 }, () => core.readNamespacedPod({ name: "light-0", namespace: "eth" })),
      );
    await round();
    const opened = api.connections();
    expect(opened).toBeLessThanOrEqual(4);
    for (let i = 0; i < 5; i++) await round();
    expect(api.calls).toHaveLength(24);
    expect(api.connections()).toBe(opened);
  });

  it("over TLS: verify the server with the kubeconfig's CA and servername, present its client certificate, and handshake once", async () => {
    const tls = await tlsApiServer();
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromOptions({
      clusters: [
        {
          name: "tls",
          server: tls.url,
          caData: tls.pki.ca,
          // The server's certificate names kube.test only, not 127.0.0.1.
          tlsServerName: "kube.test",
          skipTLSVerify: false,
        },
      ],
      users: [{ name: "controller", certData: tls.pki.clientA.cert, keyData: tls.pki.clientA.key }],
      contexts: [{ name: "tls", cluster: "tls", user: "controller" }],
      currentContext: "tls",
    });
    const core = makeApiClient(kubeConfig, CoreV1Api);
    for (let i = 0; i < CALLS; i++) await core.readNamespacedPod({ name: "light-0", namespace: "eth" });
    expect(tls.clients).toEqual(Array.from({ length: CALLS }, () => "controller-a"));
    expect(tls.handshakes()).toBe(1);

    // A rotated client certificate is used from the next call on (a new connection for it).
    kubeConfig.users = [{ name: "controller", certData: tls.pki.clientB.cert, keyData: tls.pki.clientB.key }];
    for (let i = 0; i < 3; i++) await core.readNamespacedPod({ name: "light-0", namespace: "eth" });
    expect(tls.clients.slice(CALLS)).toEqual(["controller-b", "controller-b", "controller-b"]);
    expect(tls.handshakes()).toBe(2);

    // What client-node 1.4 does by itself: a handshake per call.
    const library = kubeConfig.makeApiClient(CoreV1Api);
    for (let i = 0; i < 3; i++) await library.readNamespacedPod({ name: "light-0", namespace: "eth" });
    expect(tls.handshakes()).toBe(5);
  });
});

/** An HTTPS API server answering any GET with a pod, requiring a client certificate from its CA; records each caller's CN. */
async function tlsApiServer() {
  const pki = makePki();
  let handshakes = 0;
  const clients: string[] = [];
  const server = createServer(
    { key: pki.server.key, cert: pki.server.cert, ca: pki.ca, requestCert: true, rejectUnauthorized: true },
    (req, res) => {
      clients.push(String((req.socket as TLSSocket).getPeerCertificate().subject.CN));
      req.resume();
      res.writeHead(200, { "content-type": "application/json" });
      res.end(
        JSON.stringify({ apiVersion: "v1", kind: "Pod", metadata: { name: "light-0", namespace: "eth" } }),
      );
    },
  );
  server.on("secureConnection", () => handshakes++);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  cleanup.push(() => {
    server.closeAllConnections();
    return new Promise((resolve) => server.close(resolve));
  });
  const pem = (text: string) => Buffer.from(text).toString("base64");
  return {
    url: `https://127.0.0.1:${(server.address() as AddressInfo).port}`,
    handshakes: () => handshakes,
    clients,
    // Kubeconfig *Data fields are base64 of the PEM.
    pki: {
      ca: pem(pki.ca),
      clientA: { cert: pem(pki.clientA.cert), key: pem(pki.clientA.key) },
      clientB: { cert: pem(pki.clientB.cert), key: pem(pki.clientB.key) },
    },
  };
}

/** A CA, a server certificate for kube.test and two client certificates (CN controller-a, controller-b). */
function makePki() {
  const openssl = findTool("openssl", "openssl");
  if (!openssl.path) throw new Error(openssl.missing);
  const dir = tempDir();
  const run = (...args: string[]) => execFileSync(openssl.path!, args, { cwd: dir, stdio: "pipe" });
  const read = (name: string) => readFileSync(join(dir, name), "utf8");
  const key = (name: string) =>
    run("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", name);
  key("ca.key");
  run("req", "-x509", "-new", "-key", "ca.key", "-subj", "/CN=test-ca", "-days", "2", "-out", "ca.crt");
  const issue = (name: string, cn: string, extensions: string) => {
    key(`${name}.key`);
    run("req", "-new", "-key", `${name}.key`, "-subj", `/CN=${cn}`, "-out", `${name}.csr`);
    writeFileSync(join(dir, `${name}.ext`), extensions);
    run(
      "x509",
      "-req",
      "-in",
      `${name}.csr`,
      "-CA",
      "ca.crt",
      "-CAkey",
      "ca.key",
      "-CAcreateserial",
      "-days",
      "2",
      "-extfile",
      `${name}.ext`,
      "-out",
      `${name}.crt`,
    );
    return { cert: read(`${name}.crt`), key: read(`${name}.key`) };
  };
  const server = issue("server", "kube.test", "subjectAltName=DNS:kube.test\nextendedKeyUsage=serverAuth\n");
  const clientA = issue("client-a", "controller-a", "extendedKeyUsage=clientAuth\n");
  const clientB = issue("client-b", "controller-b", "extendedKeyUsage=clientAuth\n");
  return { ca: read("ca.crt"), server, clientA, clientB };
}
