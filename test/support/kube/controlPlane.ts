import { spawn, type ChildProcess } from "node:child_process";
import { generateKeyPairSync, randomBytes } from "node:crypto";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CoreV1Api, KubeConfig } from "@kubernetes/client-node";
import { freePort } from "../../../src/process/freePort.js";
import { waitFor } from "../waitFor.js";
import type { ControlPlaneBinaries } from "./controlPlaneBinaries.js";

/**
 * The controllers of kube-controller-manager the tests need: workloads, EndpointSlices, PodDisruptionBudget status
 * (evictions read it), garbage collection (owner references), namespaces and their service accounts.
 */
export const CONTROLLERS = [
  "endpointslice-controller",
  "statefulset-controller",
  "deployment-controller",
  "replicaset-controller",
  "garbage-collector-controller",
  "disruption-controller",
  "namespace-controller",
  "serviceaccount-controller",
  "root-ca-certificate-publisher-controller",
];

export interface ControlPlane {
  /** https://127.0.0.1:PORT */
  server: string;
  /** The API server's serving certificate chain, to trust it. */
  caFile: string;
  caData: string;
  dir: string;
  /** A KubeConfig for the cluster admin (system:masters). */
  admin(): KubeConfig;
  /** A kubeconfig file for the admin, for helm and kubectl. */
  adminKubeconfigFile: string;
  /** A KubeConfig and kubeconfig file that authenticate with TOKEN (e.g. a service account's). */
  withToken(token: string, name: string): Promise<{ kubeConfig: KubeConfig; file: string }>;
  /** A token of a service account through the TokenRequest API, optionally bound to a pod as a kubelet binds it. */
  serviceAccountToken(
    namespace: string,
    serviceAccount: string,
    boundPod?: { name: string; uid: string },
  ): Promise<string>;
  /** Every request the API server answered, from its audit log (level Metadata), oldest first. */
  auditEvents(): Promise<AuditEvent[]>;
  /** The audit log itself (JSON lines), for readers that must not load it whole. */
  auditLogFile: string;
  /** Recent output of a component, for failure messages. */
  logs(component: "etcd" | "kube-apiserver" | "kube-controller-manager"): string;
  stop(): Promise<void>;
}

/** The fields of an audit.k8s.io/v1 Event the tests read. */
export interface AuditEvent {
  verb: string;
  requestURI: string;
  user: { username: string; groups?: string[]; extra?: Record<string, string[]> };
  objectRef?: {
    resource?: string;
    subresource?: string;
    namespace?: string;
    name?: string;
    apiGroup?: string;
  };
  responseStatus?: { code?: number; reason?: string; message?: string };
  stageTimestamp: string;
}

interface Component {
  name: "etcd" | "kube-apiserver" | "kube-controller-manager";
  child: ChildProcess;
  output: string[];
}

/**
 * Starts etcd, kube-apiserver (secure port on 127.0.0.1, RBAC, service-account token signing, static tokens for the
 * admin and the controller manager) and kube-controller-manager, all on ephemeral ports under a temporary directory,
 * and waits until the API server is ready and the default service account exists.
 */
export async function startControlPlane(
  binaries: ControlPlaneBinaries,
  options: { controllers?: string[]; serviceCidr?: string } = {},
): Promise<ControlPlane> {
  const dir = await mkdtemp(join(tmpdir(), "lightfleet-cp-"));
  const components: Component[] = [];
  const stop = async () => {
    for (const component of components.reverse()) await stopComponent(component);
    await rm(dir, { recursive: true, force: true });
  };
  try {
    const [etcdClient, etcdPeer, apiPort] = [await freePort(), await freePort(), await freePort()];
    components.push(
      startComponent("etcd", binaries.etcd, [
        "--name=default",
        `--data-dir=${join(dir, "etcd")}`,
        `--listen-client-urls=http://127.0.0.1:${etcdClient}`,
        `--advertise-client-urls=http://127.0.0.1:${etcdClient}`,
        `--listen-peer-urls=http://127.0.0.1:${etcdPeer}`,
        `--initial-advertise-peer-urls=http://127.0.0.1:${etcdPeer}`,
        `--initial-cluster=default=http://127.0.0.1:${etcdPeer}`,
        // Test data only: no fsync keeps etcd fast on a loaded machine.
        "--unsafe-no-fsync",
        "--log-level=warn",
      ]),
    );
    await waitFor(
      async () =>
        (await fetch(`http://127.0.0.1:${etcdClient}/health`).then((r) => r.json())) as { health?: string },
      { timeoutMs: 30_000, intervalMs: 100, what: "etcd to answer /health" },
    );

    const { publicKey, privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
    await writeFile(join(dir, "sa.pub"), publicKey.export({ type: "spki", format: "pem" }));
    await writeFile(join(dir, "sa.key"), privateKey.export({ type: "pkcs8", format: "pem" }), {
      mode: 0o600,
    });
    const adminToken = randomBytes(24).toString("hex");
    const kcmToken = randomBytes(24).toString("hex");
    await writeFile(
      join(dir, "tokens.csv"),
      `${adminToken},admin,admin,"system:masters"\n${kcmToken},system:kube-controller-manager,kcm,"system:masters"\n`,
      { mode: 0o600 },
    );
    const server = `https://127.0.0.1:${apiPort}`;
    // Every request at level Metadata: who called what, and the answer's code (a 403 names a missing RBAC rule).
    await writeFile(
      join(dir, "audit-policy.yaml"),
      JSON.stringify({
        apiVersion: "audit.k8s.io/v1",
        kind: "Policy",
        omitStages: ["RequestReceived"],
        rules: [{ level: "Metadata" }],
      }),
    );
    const auditLog = join(dir, "audit.log");
    components.push(
      startComponent("kube-apiserver", binaries.kubeApiserver, [
        `--etcd-servers=http://127.0.0.1:${etcdClient}`,
        "--bind-address=127.0.0.1",
        `--secure-port=${apiPort}`,
        "--advertise-address=127.0.0.1",
        // The API server makes its own serving certificate here (for 127.0.0.1 and localhost).
        `--cert-dir=${join(dir, "pki")}`,
        `--token-auth-file=${join(dir, "tokens.csv")}`,
        "--authorization-mode=RBAC",
        `--service-account-key-file=${join(dir, "sa.pub")}`,
        `--service-account-signing-key-file=${join(dir, "sa.key")}`,
        "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
        "--api-audiences=https://kubernetes.default.svc.cluster.local",
        `--service-cluster-ip-range=${options.serviceCidr ?? "10.96.0.0/16"}`,
        // The `kubernetes` Service's endpoints would be 127.0.0.1, which the API refuses in endpoints.
        "--endpoint-reconciler-type=none",
        "--allow-privileged=true",
        "--profiling=false",
        `--audit-policy-file=${join(dir, "audit-policy.yaml")}`,
        `--audit-log-path=${auditLog}`,
        "--audit-log-format=json",
        "--audit-log-mode=blocking",
        "--v=1",
      ]),
    );
    const caFile = join(dir, "pki", "apiserver.crt");
    await waitFor(() => readFile(caFile).then(() => true), {
      timeoutMs: 60_000,
      intervalMs: 100,
      what: "kube-apiserver to write its serving certificate",
    });
    const caData = await readFile(caFile, "utf8");
    const kubeconfigText = (token: string, user: string) => kubeconfigYaml({ server, caData, token, user });
    const adminKubeconfigFile = join(dir, "admin.kubeconfig");
    await writeFile(adminKubeconfigFile, kubeconfigText(adminToken, "admin"), { mode: 0o600 });
    const admin = () => {
      const kc = new KubeConfig();
      kc.loadFromString(kubeconfigText(adminToken, "admin"));
      return kc;
    };
    await waitFor(
      async () => {
        const res = await fetchApi(server, caData, adminToken, "/readyz");
        return res.status === 200;
      },
      { timeoutMs: 90_000, intervalMs: 200, what: "kube-apiserver /readyz" },
    );

    const kcmKubeconfig = join(dir, "kcm.kubeconfig");
    await writeFile(kcmKubeconfig, kubeconfigText(kcmToken, "system:kube-controller-manager"), {
      mode: 0o600,
    });
    components.push(
      startComponent("kube-controller-manager", binaries.kubeControllerManager, [
        `--kubeconfig=${kcmKubeconfig}`,
        `--controllers=${(options.controllers ?? CONTROLLERS).join(",")}`,
        "--leader-elect=false",
        // No serving: nothing scrapes it, and a port would be one more to choose.
        "--secure-port=0",
        `--root-ca-file=${caFile}`,
        `--service-account-private-key-file=${join(dir, "sa.key")}`,
        // Quick enough for tests: pods are (re)created and slices follow without the production batching delay.
        "--concurrent-statefulset-syncs=5",
        "--v=1",
      ]),
    );
    const core = admin().makeApiClient(CoreV1Api);
    await waitFor(
      () => core.readNamespacedServiceAccount({ name: "default", namespace: "default" }).then(() => true),
      {
        timeoutMs: 60_000,
        intervalMs: 200,
        what: "kube-controller-manager to create the default service account",
      },
    );

    const withToken = async (token: string, name: string) => {
      const text = kubeconfigText(token, name);
      const file = join(dir, `${name.replaceAll(/[^a-z0-9-]/gi, "_")}.kubeconfig`);
      await writeFile(file, text, { mode: 0o600 });
      const kubeConfig = new KubeConfig();
      kubeConfig.loadFromString(text);
      return { kubeConfig, file };
    };
    const serviceAccountToken = async (
      namespace: string,
      serviceAccount: string,
      boundPod?: { name: string; uid: string },
    ) => {
      const result = await core.createNamespacedServiceAccountToken({
        name: serviceAccount,
        namespace,
        body: {
          spec: {
            audiences: ["https://kubernetes.default.svc.cluster.local"],
            expirationSeconds: 3600,
            ...(boundPod
              ? { boundObjectRef: { apiVersion: "v1", kind: "Pod", name: boundPod.name, uid: boundPod.uid } }
              : {}),
          },
        },
      });
      return result.status!.token;
    };
    return {
      server,
      caFile,
      caData,
      dir,
      admin,
      adminKubeconfigFile,
      withToken,
      serviceAccountToken,
      auditLogFile: auditLog,
      async auditEvents() {
        const text = await readFile(auditLog, "utf8").catch(() => "");
        return text
          .split("\n")
          .filter((line) => line.trim() !== "")
          .map((line) => JSON.parse(line) as AuditEvent);
      },
      logs: (name) => components.find((c) => c.name === name)?.output.join("") ?? "",
      stop,
    };
  } catch (error) {
    const logs = components.map((c) => `--- ${c.name}\n${c.output.join("").slice(-3000)}`).join("\n");
    await stop();
    throw new Error(`${(error as Error).message}\n${logs}`);
  }
}

function kubeconfigYaml(options: { server: string; caData: string; token: string; user: string }): string {
  return JSON.stringify({
    apiVersion: "v1",
    kind: "Config",
    clusters: [
      {
        name: "test",
        cluster: {
          server: options.server,
          "certificate-authority-data": Buffer.from(options.caData).toString("base64"),
        },
      },
    ],
    users: [{ name: options.user, user: { token: options.token } }],
    contexts: [{ name: "test", context: { cluster: "test", user: options.user, namespace: "default" } }],
    "current-context": "test",
  });
}

async function fetchApi(
  server: string,
  caData: string,
  token: string,
  path: string,
): Promise<{ status: number }> {
  const { request } = await import("node:https");
  return new Promise((resolve, reject) => {
    const req = request(
      `${server}${path}`,
      { ca: caData, headers: { authorization: `Bearer ${token}` }, timeout: 5_000 },
      (res) => {
        res.resume();
        res.once("end", () => resolve({ status: res.statusCode ?? 0 }));
      },
    );
    req.once("timeout", () => req.destroy(new Error("timeout")));
    req.once("error", reject);
    req.end();
  });
}

const OUTPUT_LINES = 400;

function startComponent(name: Component["name"], binary: string, args: string[]): Component {
  const child = spawn(binary, args, { stdio: ["ignore", "pipe", "pipe"] });
  const output: string[] = [];
  const keep = (chunk: Buffer) => {
    output.push(chunk.toString());
    if (output.length > OUTPUT_LINES) output.splice(0, output.length - OUTPUT_LINES);
  };
  child.stdout!.on("data", keep);
  child.stderr!.on("data", keep);
  child.once("error", (error) => output.push(`spawn failed: ${error.message}\n`));
  return { name, child, output };
}

async function stopComponent({ child }: Component): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
  await exited;
  clearTimeout(timer);
}
