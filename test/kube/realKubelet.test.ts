import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import {
  AppsV1Api,
  CoordinationV1Api,
  CoreV1Api,
  type V1Deployment,
  type V1Pod,
} from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse, parseAllDocuments, stringify } from "yaml";
import { kubectl } from "../support/helm.js";
import { RENDERED_CHART } from "../support/image/chartPod.js";
import { builtImage } from "../support/image/lightfleetImage.js";
import { missingPodman } from "../support/image/podman.js";
import { CNI_BIN_DIR, cniUnavailable, createCniBridge, type CniBridge } from "../support/kube/cniBridge.js";
import { startContainerd, unmountUnder, type Containerd } from "../support/kube/containerd.js";
import { ensureControlPlane, missingGo } from "../support/kube/controlPlaneBinaries.js";
import { startControlPlane, type ControlPlane } from "../support/kube/controlPlane.js";
import { buildLocalImages, importImages, type LocalImages } from "../support/kube/localImages.js";
import {
  startApiServiceRelay,
  startBinder,
  startRealKubelet,
  type RealKubelet,
} from "../support/kube/realKubelet.js";
import { findTool } from "../support/requireTool.js";
import { waitFor } from "../support/waitFor.js";

const run = promisify(execFile);

/**
 * Pods in real containers: the kubelet built from the pinned k8s.io/kubernetes, joined to the real kube-apiserver,
 * with Debian's containerd and runc and a CNI bridge from containernetworking-plugins. It runs a light node (anvil)
 * as a container, the chart's gateway Deployment from the image `npm run image` built (with the chart's security
 * context and probes, unchanged), and restarts a container whose liveness probe fails. Needs root.
 */
async function unavailable(): Promise<string | undefined> {
  const tools = [
    findTool("containerd", "containerd"),
    findTool("ctr", "containerd"),
    findTool("runc", "runc"),
    findTool("ip", "iproute2"),
  ];
  const reason =
    tools.find((t) => !t.path)?.missing ??
    cniUnavailable() ??
    (await missingGo()) ??
    (await missingPodman()) ??
    (process.getuid?.() === 0 ? undefined : "the real kubelet needs root (containers, mounts, a bridge)") ??
    ((await builtImage()) ? undefined : "the image for this work tree is not built: run `npm run image`");
  if (reason && process.env.CI) throw new Error(reason);
  return reason;
}
const why = await unavailable();
if (why) console.warn(`skipping the real kubelet tests: ${why}`);

const NAMESPACE = "lightfleet";
const NODE_NAME = `lightfleet-test-${process.pid}`;
/** The image reference the rendered chart's pods name: containerd has the built image under it too. */
const CHART_IMAGE = chartImage();
const CHAIN_ID = 31_337;

interface KubeDoc {
  kind: string;
  metadata: { name: string; namespace?: string };
  data?: Record<string, string>;
}
function chartDocs(): KubeDoc[] {
  return parseAllDocuments(readFileSync(RENDERED_CHART, "utf8"))
    .map((d) => d.toJS() as KubeDoc | null)
    .filter((d): d is KubeDoc => d !== null);
}
function chartDoc<T>(kind: string, name: string): T {
  const doc = chartDocs().find((d) => d.kind === kind && d.metadata.name === name);
  if (!doc) throw new Error(`the rendered chart has no ${kind} ${name}`);
  return doc as T;
}
function chartImage(): string {
  const deployment = chartDoc<V1Deployment>("Deployment", "lightfleet-gateway");
  return deployment.spec!.template.spec!.containers[0]!.image!;
}

async function jsonRpc(url: string, method: string, params: unknown[] = []): Promise<unknown> {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
    signal: AbortSignal.timeout(10_000),
  });
  return ((await response.json()) as { result?: unknown }).result;
}

describe.skipIf(why !== undefined)(
  "pods in real containers through a real kubelet",
  { timeout: 240_000 },
  () => {
    let dir: string;
    let plane: ControlPlane;
    let bridge: CniBridge;
    let containerd: Containerd;
    let kubelet: RealKubelet;
    let images: LocalImages;
    let binder: { stop(): void } | undefined;
    let core: CoreV1Api;
    let apps: AppsV1Api;
    const cleanup: Array<() => Promise<unknown>> = [];

    const context = () =>
      `\n--- kubelet\n${kubelet?.logs().slice(-3000) ?? ""}\n--- containerd\n${containerd?.logs().slice(-1500) ?? ""}`;
    const pod = (name: string) => core.readNamespacedPod({ name, namespace: NAMESPACE });
    const ready = (p: V1Pod) => p.status?.conditions?.find((c) => c.type === "Ready")?.status === "True";
    const waitReady = (find: () => Promise<V1Pod | undefined>, what: string) =>
      waitFor(
        async () => {
          const p = await find();
          return p && ready(p) ? p : undefined;
        },
        { timeoutMs: 150_000, intervalMs: 500, what: () => `${what} Ready${context()}` },
      );

    /** The pid (on this host) of the running container CONTAINERID (`containerd://ID`), as containerd reports it. */
    const taskPid = async (containerId: string) => {
      const id = containerId.replace(/^containerd:\/\//, "");
      const line = (await containerd.ctr(["tasks", "ls"])).split("\n").find((l) => l.startsWith(`${id} `));
      if (!line) throw new Error(`no containerd task ${id}`);
      return Number(line.split(/\s+/)[1]);
    };

    beforeAll(async () => {
      dir = await mkdtemp(join(tmpdir(), "lightfleet-kubelet-"));
      cleanup.push(() => rm(dir, { recursive: true, force: true }));
      const binaries = await ensureControlPlane();
      bridge = await createCniBridge(dir);
      cleanup.push(() => bridge.destroy());
      // A service range per run (as the bridge's subnet is): its first address is the `kubernetes` Service's.
      const n = bridge.hostIp.split(".")[2]!;
      plane = await startControlPlane(binaries, { serviceCidr: `10.216.${n}.0/24` });
      cleanup.push(() => plane.stop());
      core = plane.admin().makeApiClient(CoreV1Api);
      apps = plane.admin().makeApiClient(AppsV1Api);
      images = await buildLocalImages((await builtImage())!, dir);
      containerd = await startContainerd({
        dir: join(dir, "containerd"),
        sandboxImage: images.pause,
        cniConfDir: bridge.confDir,
        cniBinDir: CNI_BIN_DIR,
      });
      cleanup.push(async () => {
        await containerd.stop();
        await unmountUnder(dir);
      });
      await importImages(containerd, [images.pause, images.anvil, images.lightfleet], dir, {
        [images.lightfleet]: CHART_IMAGE,
      });
      const relay = await startApiServiceRelay({
        server: plane.server,
        serviceIp: `10.216.${n}.1`,
        device: bridge.bridge,
      });
      cleanup.push(() => relay.stop());
      kubelet = await startRealKubelet({
        binary: binaries.kubelet,
        kubeConfig: plane.admin(),
        kubeconfigFile: plane.adminKubeconfigFile,
        endpoint: containerd.endpoint,
        nodeName: NODE_NAME,
        nodeIp: bridge.hostIp,
        dir: join(dir, "kubelet"),
      });
      cleanup.push(() => kubelet.stop());
      // The pods go through the kubelet's own teardown (CNI DEL, sandbox stop) while it still runs.
      cleanup.push(async () => {
        binder?.stop();
        await apps.deleteCollectionNamespacedDeployment({ namespace: NAMESPACE }).catch(() => undefined);
        await core
          .deleteCollectionNamespacedPod({ namespace: NAMESPACE, gracePeriodSeconds: 1 })
          .catch(() => undefined);
        await waitFor(
          async () =>
            (await core.listNamespacedPod({ namespace: NAMESPACE })).items.length === 0 &&
            (await containerd.ctr(["tasks", "ls", "-q"])).trim() === "",
          { timeoutMs: 90_000, intervalMs: 500, what: () => `the pods to be gone${context()}` },
        ).catch((error: unknown) => console.warn(String(error)));
      });
      // The chart's own objects but its workloads, their ConfigMap and the keys' volume (made by the tests below):
      // the namespace, CRDs, service accounts, RBAC, Services and the controller's Lease.
      const kinds = [
        "Namespace",
        "CustomResourceDefinition",
        "ServiceAccount",
        "Role",
        "RoleBinding",
        "Service",
        "Lease",
      ];
      const objects = chartDocs().filter(
        (d) => kinds.includes(d.kind) && d.metadata.name !== "lightfleet-gateway-redis",
      );
      const applied = await kubectl(["apply", "--server-side", "-f", "-"], {
        kubeconfig: plane.adminKubeconfigFile,
        input: objects.map((o) => stringify(o)).join("---\n"),
      });
      expect(applied.code, applied.stderr).toBe(0);
      binder = startBinder(plane.admin(), NAMESPACE, NODE_NAME);
    }, 20 * 60_000);

    afterAll(async () => {
      for (const fn of cleanup.splice(0).reverse()) await fn().catch((e: unknown) => console.warn(String(e)));
    }, 5 * 60_000);

    /** A light node's pod as the chart's pools run them: anvil on its pod IP, unprivileged, read-only root. */
    const anvilPod = (name: string, probePort = 8545, readinessPort = 8545): V1Pod => ({
      metadata: { name, labels: { "app.kubernetes.io/component": "light-node" } },
      spec: {
        nodeName: NODE_NAME,
        automountServiceAccountToken: false,
        securityContext: { runAsUser: 10001, runAsGroup: 10001, runAsNonRoot: true },
        terminationGracePeriodSeconds: 1,
        containers: [
          {
            name: "anvil",
            image: images.anvil,
            imagePullPolicy: "Never",
            args: ["--host", "0.0.0.0", "--port", "8545", "--chain-id", String(CHAIN_ID)],
            ports: [{ name: "rpc", containerPort: 8545 }],
            securityContext: {
              readOnlyRootFilesystem: true,
              allowPrivilegeEscalation: false,
              capabilities: { drop: ["ALL"] },
            },
            readinessProbe: { tcpSocket: { port: readinessPort }, periodSeconds: 1 },
            // Generous on time and count, so load never fails the healthy one; a refused port fails at once.
            livenessProbe: {
              tcpSocket: { port: probePort },
              periodSeconds: 1,
              timeoutSeconds: 5,
              failureThreshold: 3,
            },
          },
        ],
      },
    });

    let lightNodeIp = "";

    it("runs a light node (anvil) in a container: Running, Ready by its probe, serving on its pod IP", async () => {
      await core.createNamespacedPod({ namespace: NAMESPACE, body: anvilPod("light-node-0") });
      const running = await waitReady(() => pod("light-node-0"), "light-node-0");
      lightNodeIp = running.status!.podIP!;
      // An address of the CNI bridge's subnet, given by host-local, not the host's.
      expect(lightNodeIp.split(".").slice(0, 3).join(".")).toBe(
        bridge.hostIp.split(".").slice(0, 3).join("."),
      );
      expect(lightNodeIp).not.toBe(bridge.hostIp);
      expect(running.status!.containerStatuses![0]!.containerID).toMatch(/^containerd:\/\//);
      const rpc = `http://${lightNodeIp}:8545`;
      expect(await jsonRpc(rpc, "eth_chainId")).toBe(`0x${CHAIN_ID.toString(16)}`);
      await jsonRpc(rpc, "anvil_mine", ["0x3"]);
      expect(await jsonRpc(rpc, "eth_blockNumber")).toBe("0x3");
      // Its process is a container's: in a network namespace of its own, as uid 10001.
      const pid = await taskPid(running.status!.containerStatuses![0]!.containerID!);
      const status = readFileSync(`/proc/${pid}/status`, "utf8");
      expect(/^Uid:\s+(\d+)/m.exec(status)?.[1]).toBe("10001");
      expect((await run("readlink", [`/proc/${pid}/ns/net`])).stdout).not.toBe(
        (await run("readlink", ["/proc/self/ns/net"])).stdout,
      );
    });

    it("runs the chart's gateway Deployment from the image: Ready by the chart's probes, answering JSON-RPC on its pod IP", async () => {
      expect(lightNodeIp, "the light node test runs first").not.toBe("");
      // The chart's ConfigMap, with the light node above as the network's node (the chart's pools would be found
      // through the controller) and in-process shared state (one replica: no bundled Redis).
      const configMap = chartDoc<KubeDoc>("ConfigMap", "lightfleet-config");
      const config = parse(configMap.data!["lightfleet.yaml"]!) as Record<string, Record<string, unknown>>;
      const node = { http: `http://${lightNodeIp}:8545`, ws: `ws://${lightNodeIp}:8545` };
      config.gateway = { ...config.gateway, sharedState: { backend: "memory" } };
      const withNetworks = {
        ...config,
        networks: [
          {
            name: "devnet",
            chainId: CHAIN_ID,
            reservedPeers: [{ name: "peer", http: node.http }],
            gateway: { default: true, upstreams: [{ name: "light-node-0", ...node }] },
          },
        ],
      };
      await core.createNamespacedConfigMap({
        namespace: NAMESPACE,
        body: {
          metadata: { name: "lightfleet-config" },
          data: { "lightfleet.yaml": stringify(withNetworks) },
        },
      });
      const deployment = chartDoc<V1Deployment>("Deployment", "lightfleet-gateway");
      deployment.spec!.replicas = 1;
      await apps.createNamespacedDeployment({ namespace: NAMESPACE, body: deployment });

      const gatewayPod = async () =>
        (
          await core.listNamespacedPod({
            namespace: NAMESPACE,
            labelSelector: "app.kubernetes.io/component=gateway",
          })
        ).items[0];
      const running = await waitReady(gatewayPod, "the gateway pod");
      const container = running.spec!.containers[0]!;
      expect(container.image).toBe(CHART_IMAGE);
      expect(container.securityContext).toMatchObject({ readOnlyRootFilesystem: true, runAsUser: 10001 });
      expect(await jsonRpc(`http://${running.status!.podIP!}:8545`, "eth_blockNumber")).toBe("0x3");
      expect(await jsonRpc(`http://${running.status!.podIP!}:8545`, "eth_chainId")).toBe(
        `0x${CHAIN_ID.toString(16)}`,
      );
      // The chart's security context, as runc applied it: uid 10001, no capabilities at all, no new privileges.
      const pid = await taskPid(running.status!.containerStatuses![0]!.containerID!);
      const status = readFileSync(`/proc/${pid}/status`, "utf8");
      expect(/^Uid:\s+(\d+)/m.exec(status)?.[1]).toBe("10001");
      expect(/^CapEff:\s+(\w+)/m.exec(status)?.[1]).toBe("0000000000000000");
      expect(/^CapBnd:\s+(\w+)/m.exec(status)?.[1]).toBe("0000000000000000");
      expect(/^NoNewPrivs:\s+(\d)/m.exec(status)?.[1]).toBe("1");
    });

    it("runs the chart's controller Deployment from the image: through the kubernetes Service as its service account, it takes the Lease and is Ready", async () => {
      const deployment = chartDoc<V1Deployment>("Deployment", "lightfleet-controller");
      deployment.spec!.replicas = 1;
      await apps.createNamespacedDeployment({ namespace: NAMESPACE, body: deployment });
      const controllerPod = async () =>
        (
          await core.listNamespacedPod({
            namespace: NAMESPACE,
            labelSelector: "app.kubernetes.io/component=controller",
          })
        ).items[0];
      const running = await waitReady(controllerPod, "the controller pod");
      expect(running.spec!.containers[0]!.image).toBe(CHART_IMAGE);
      const coordination = plane.admin().makeApiClient(CoordinationV1Api);
      const lease = await coordination.readNamespacedLease({
        name: "lightfleet-controller",
        namespace: NAMESPACE,
      });
      expect(lease.spec?.holderIdentity).toBe(running.metadata!.name);
      // Its calls came with the token the kubelet projected for it, not with anyone else's.
      const updates = (await plane.auditEvents()).filter(
        (e) => e.objectRef?.resource === "leases" && e.verb === "update" && e.responseStatus?.code === 200,
      );
      expect(updates.map((e) => e.user.username)).toContain(
        "system:serviceaccount:lightfleet:lightfleet-controller",
      );
    });

    it("restarts a container whose liveness probe fails, keeps one whose probe passes, holds back Ready on a failing readiness probe", async () => {
      // Anvil listens on 8545; a probe of 8546 finds nothing there.
      await core.createNamespacedPod({ namespace: NAMESPACE, body: anvilPod("never-ready", 8545, 8546) });
      await core.createNamespacedPod({ namespace: NAMESPACE, body: anvilPod("failing-liveness", 8546) });
      const restarted = await waitFor(
        async () => {
          const status = (await pod("failing-liveness")).status?.containerStatuses?.[0];
          return (status?.restartCount ?? 0) >= 1 ? status : undefined;
        },
        { timeoutMs: 120_000, intervalMs: 500, what: () => `a restart of failing-liveness${context()}` },
      );
      expect(restarted.lastState?.terminated).toBeDefined();
      // Events reach the API from the kubelet's recorder a moment after the probe result.
      const messages = async (name: string) =>
        (
          await core.listNamespacedEvent({
            namespace: NAMESPACE,
            fieldSelector: `involvedObject.name=${name}`,
          })
        ).items
          .map((e) => e.message ?? "")
          .join("\n");
      await waitFor(async () => /failed liveness probe/.test(await messages("failing-liveness")), {
        timeoutMs: 30_000,
        intervalMs: 500,
        what: "a 'failed liveness probe' Event of failing-liveness",
      });
      // The light node's probe passes all along: never restarted.
      const healthy = (await pod("light-node-0")).status!.containerStatuses![0]!;
      expect(healthy.restartCount).toBe(0);
      // Started before the restarted one, probed as often: running all along, never Ready, never restarted.
      const unready = await pod("never-ready");
      expect(unready.status?.containerStatuses?.[0]).toMatchObject({ ready: false, restartCount: 0 });
      expect(unready.status?.containerStatuses?.[0]?.state?.running).toBeDefined();
      expect(ready(unready)).toBe(false);
      await waitFor(async () => /Readiness probe failed/.test(await messages("never-ready")), {
        timeoutMs: 30_000,
        intervalMs: 500,
        what: "a 'Readiness probe failed' Event of never-ready",
      });
    });
  },
);
