import { execFile } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import {
  AppsV1Api,
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  DiscoveryV1Api,
  type V1Deployment,
  type V1Pod,
} from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseAllDocuments, stringify } from "yaml";
import type { Devnet } from "../../src/devnet/devnet.js";
import type { LightNode } from "../../src/kubernetes/api/crds.js";
import { startTestDevnet } from "../support/devnet.js";
import { CHART_DIR, helm, kubectl, parseObjects } from "../support/helm.js";
import { RENDERED_CHART } from "../support/image/chartPod.js";
import { builtImage } from "../support/image/lightfleetImage.js";
import { missingPodman } from "../support/image/podman.js";
import { startClusterDns, type ClusterDns } from "../support/kube/clusterDns.js";
import { CNI_BIN_DIR, cniUnavailable, createCniBridge, type CniBridge } from "../support/kube/cniBridge.js";
import { ContainerLedger } from "../support/kube/containerLedger.js";
import { startContainerd, unmountUnder, type Containerd } from "../support/kube/containerd.js";
import { ensureControlPlane, missingGo } from "../support/kube/controlPlaneBinaries.js";
import { startControlPlane, type ControlPlane } from "../support/kube/controlPlane.js";
import { EndpointSliceHistory } from "../support/kube/endpointSliceHistory.js";
import { startLightNodeAttacher } from "../support/kube/lightNodeAttacher.js";
import { buildLocalImages, importImages, type LocalImages } from "../support/kube/localImages.js";
import {
  startApiServiceRelay,
  startBinder,
  startRealKubelet,
  startTcpRelay,
  type RealKubelet,
} from "../support/kube/realKubelet.js";
import { CLUSTER_DOMAIN, startServiceProxy } from "../support/kube/serviceProxy.js";
import { findTool } from "../support/requireTool.js";
import { ROOT } from "../support/runCli.js";
import { waitFor } from "../support/waitFor.js";

const run = promisify(execFile);

/**
 * The chart in real containers: the kubelet built from the pinned k8s.io/kubernetes, joined to the real
 * kube-apiserver (with kube-controller-manager's workload, EndpointSlice and disruption controllers), with Debian's
 * containerd and runc and a CNI bridge from containernetworking-plugins. The chart is installed with `helm install`
 * from the image `npm run image` built; its controller makes the light nodes (anvils, an image built for the tests)
 * from the LightNodePool, the devnet's block driver mirrors its chain onto them, and `helm test` runs its hook pod.
 * Then the break: one light node held behind must be unrouted through the real EndpointSlice and kept, one stopped
 * in its container must be unrouted, evicted and recreated in a new container, and `helm test` must still pass.
 * Stand-ins remain for kube-scheduler (a binder: one node), kube-proxy and cluster DNS (docs/kubernetes.md), and
 * for a light client's own sync (the devnet's block driver). Needs root.
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
const RELEASE = "lightfleet";
const NETWORK = "devnet";
const NODE_NAME = `lightfleet-test-${process.pid}`;
/** The image reference the chart's pods name by default: containerd has the built image under it too. */
const CHART_IMAGE = chartImage();
const CHAIN_ID = 31_337;
const GROUP = { group: "lightfleet.io", version: "v1alpha1", namespace: NAMESPACE };

interface KubeDoc {
  kind: string;
  metadata: { name: string; namespace?: string };
}
function chartImage(): string {
  const doc = parseAllDocuments(readFileSync(RENDERED_CHART, "utf8"))
    .map((d) => d.toJS() as KubeDoc | null)
    .find((d) => d?.kind === "Deployment" && d.metadata.name === "lightfleet-gateway") as
    V1Deployment | undefined;
  if (!doc) throw new Error("the rendered chart has no Deployment lightfleet-gateway");
  return doc.spec!.template.spec!.containers[0]!.image!;
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
  "the chart installed with helm, its pods in real containers through a real kubelet",
  { timeout: 240_000 },
  () => {
    let dir: string;
    let plane: ControlPlane;
    let bridge: CniBridge;
    let containerd: Containerd;
    let kubelet: RealKubelet;
    let images: LocalImages;
    let devnet: Devnet;
    let dns: ClusterDns;
    /** The devnet's full node as pods reach it: the light nodes' reserved peer. */
    let peerUrl = "";
    let binder: { stop(): void } | undefined;
    let attacher: { stop(): void } | undefined;
    let core: CoreV1Api;
    let apps: AppsV1Api;
    let custom: CustomObjectsApi;
    let discovery: DiscoveryV1Api;
    const cleanup: Array<() => Promise<unknown>> = [];
    const helmRun = (args: string[], timeoutMs = 120_000) =>
      helm(args, { kubeconfig: plane.adminKubeconfigFile, timeoutMs });
    const kubectlRun = (args: string[]) => kubectl(args, { kubeconfig: plane.adminKubeconfigFile });

    const context = () =>
      `\n--- kubelet\n${kubelet?.logs().slice(-3000) ?? ""}\n--- containerd\n${containerd?.logs().slice(-1500) ?? ""}`;
    const pod = (name: string) => core.readNamespacedPod({ name, namespace: NAMESPACE });
    const pods = async (selector: string) =>
      (await core.listNamespacedPod({ namespace: NAMESPACE, labelSelector: selector })).items;
    const lightPods = () => pods(`app.kubernetes.io/component=light-node,lightfleet.io/network=${NETWORK}`);
    const condition = (p: V1Pod, type: string) => p.status?.conditions?.find((c) => c.type === type)?.status;
    const ready = (p: V1Pod) => condition(p, "Ready") === "True";
    const lightNode = (name: string) =>
      custom.getNamespacedCustomObject({ ...GROUP, plural: "lightnodes", name }) as Promise<LightNode>;
    const waitReady = (find: () => Promise<V1Pod | undefined>, what: string) =>
      waitFor(
        async () => {
          const p = await find();
          return p && ready(p) ? p : undefined;
        },
        { timeoutMs: 150_000, intervalMs: 500, what: () => `${what} Ready${context()}` },
      );
    const readyAddresses = async (service: string) => {
      const slices = await discovery.listNamespacedEndpointSlice({
        namespace: NAMESPACE,
        labelSelector: `kubernetes.io/service-name=${service}`,
      });
      return slices.items.flatMap((slice) =>
        (slice.endpoints ?? []).filter((e) => e.conditions?.ready !== false).flatMap((e) => e.addresses),
      );
    };

    /** The id of a container (`containerd://ID`) as containerd names its task. */
    const taskId = (containerId: string) => containerId.replace(/^containerd:\/\//, "");
    /** The pid (on this host) of the running container CONTAINERID, as containerd reports it. */
    const taskPid = async (containerId: string) => {
      const id = taskId(containerId);
      const line = (await containerd.ctr(["tasks", "ls"])).split("\n").find((l) => l.startsWith(`${id} `));
      if (!line) throw new Error(`no containerd task ${id}`);
      return Number(line.split(/\s+/)[1]);
    };
    /** Container processes this file stopped (SIGSTOP): continued at the end if still there, so none is left. */
    const stopped = new Set<number>();
    /** Every container the kubelet ran for the release, for the tier's report. */
    let ledger: ContainerLedger | undefined;
    /** Every state of the pool Service's endpoints, as the real EndpointSlices showed them. */
    let routing: EndpointSliceHistory | undefined;

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
      custom = plane.admin().makeApiClient(CustomObjectsApi);
      discovery = plane.admin().makeApiClient(DiscoveryV1Api);
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
      // Services by name for pods (the helm test pod calls the gateway so): each ClusterIP an address of the bridge's
      // host side, relayed to a ready endpoint; cluster DNS answering from the Services the API holds.
      const services = startServiceProxy({
        kubeConfig: plane.admin(),
        addAddress: async (address) => {
          await run("ip", ["addr", "add", `${address}/32`, "dev", bridge.bridge], { timeout: 10_000 });
        },
      });
      cleanup.push(() => services.stop());
      dns = await startClusterDns({
        address: bridge.hostIp,
        domain: CLUSTER_DOMAIN,
        resolve: async (name) => (await services.sync(NAMESPACE))[name],
      });
      cleanup.push(() => dns.stop());
      kubelet = await startRealKubelet({
        binary: binaries.kubelet,
        kubeConfig: plane.admin(),
        kubeconfigFile: plane.adminKubeconfigFile,
        endpoint: containerd.endpoint,
        nodeName: NODE_NAME,
        nodeIp: bridge.hostIp,
        dir: join(dir, "kubelet"),
        clusterDns: bridge.hostIp,
      });
      cleanup.push(() => kubelet.stop());
      // The light nodes' chain: the devnet's full node on loopback, reached by pods through a relay on the bridge.
      devnet = await startTestDevnet({
        networks: [{ name: NETWORK, chainId: CHAIN_ID }],
        blockTimeMs: 1_000,
      });
      cleanup.push(() => devnet.stop());
      const fullNode = new URL(devnet.nodes(NETWORK).find((node) => node.role === "full")!.httpUrl);
      const peerRelay = await startTcpRelay({
        listen: { host: bridge.hostIp, port: 0 },
        target: { host: fullNode.hostname, port: Number(fullNode.port) },
      });
      cleanup.push(() => peerRelay.stop());
      // The pods go through the kubelet's own teardown (CNI DEL, sandbox stop) while it still runs.
      cleanup.push(async () => {
        binder?.stop();
        attacher?.stop();
        for (const pid of stopped) {
          try {
            process.kill(pid, "SIGCONT");
          } catch {
            // gone with its container
          }
        }
        routing?.stop();
        await helmRun(["uninstall", RELEASE, "--namespace", NAMESPACE, "--wait", "--timeout", "90s"]).catch(
          () => undefined,
        );
        await apps.deleteCollectionNamespacedStatefulSet({ namespace: NAMESPACE }).catch(() => undefined);
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
      // The report is written while the pods still exist (cleanup runs last first).
      cleanup.push(async () => {
        if (!ledger) return;
        ledger.stop();
        const text = ledger.report();
        console.log(text);
        await mkdir(join(ROOT, "test-artifacts"), { recursive: true });
        await writeFile(join(ROOT, "test-artifacts", "real-kubelet-containers.txt"), `${text}\n`);
      });
      ledger = new ContainerLedger(plane.admin(), NAMESPACE);
      routing = new EndpointSliceHistory(plane.admin(), NAMESPACE, `${RELEASE}-${NETWORK}`);
      binder = startBinder(plane.admin(), NAMESPACE, NODE_NAME);
      attacher = startLightNodeAttacher({
        kubeConfig: plane.admin(),
        namespace: NAMESPACE,
        devnet,
        port: 8545,
      });
      peerUrl = `http://${bridge.hostIp}:${peerRelay.port}`;
    }, 20 * 60_000);

    afterAll(async () => {
      for (const fn of cleanup.splice(0).reverse()) await fn().catch((e: unknown) => console.warn(String(e)));
    }, 5 * 60_000);

    const [imageRepository, imageTag] = [
      CHART_IMAGE.slice(0, CHART_IMAGE.lastIndexOf(":")),
      CHART_IMAGE.slice(CHART_IMAGE.lastIndexOf(":") + 1),
    ];
    /** The values a user would write: one network whose light nodes are anvils, its health checked briskly. */
    const values = () => {
      const anvil = images.anvil.lastIndexOf(":");
      return {
        image: { repository: imageRepository, tag: imageTag, pullPolicy: "Never" },
        networks: [
          {
            name: NETWORK,
            chainId: CHAIN_ID,
            blockTime: "1s",
            reservedPeers: [{ name: "full", http: peerUrl }],
            health: {
              probeInterval: "500ms",
              maxLagBlocks: 3,
              unhealthyAfter: 2,
              healthyAfter: 2,
              // Longer than the lag fault holds a node still (8 blocks): that node is lagging, not stalled.
              stallAfter: "30s",
              restartAfter: "3s",
              startupGrace: "20s",
              syncingIsUnhealthy: false,
            },
            gateway: { default: true },
            // The controller sizes the pool (autoscaling.mode controller, the default) from minReplicas, which is 1
            // unless set: `workload.replicas` is not used then. Two nodes, held at two by the idle request rate.
            scaling: { minReplicas: 2, maxReplicas: 2 },
            workload: {
              enabled: true,
              image: {
                repository: images.anvil.slice(0, anvil),
                tag: images.anvil.slice(anvil + 1),
                pullPolicy: "Never",
              },
              // The devnet's chain from its genesis; its block driver mirrors each block onto the node.
              args: [
                ...["--host", "0.0.0.0", "--port", "8545", "--chain-id", String(CHAIN_ID), "--no-mining"],
                ...["--timestamp", String(devnet.genesisTimestamp)],
              ],
              ports: { http: 8545, ws: 8545 },
              persistence: { enabled: false },
              terminationGracePeriodSeconds: 2,
              resources: { requests: { cpu: "10m", memory: "64Mi" } },
              probes: {
                startup: { tcpSocket: { port: "http" }, periodSeconds: 1, failureThreshold: 60 },
                liveness: {
                  tcpSocket: { port: "http" },
                  periodSeconds: 5,
                  timeoutSeconds: 5,
                  failureThreshold: 6,
                },
              },
            },
          },
        ],
        controller: { replicas: 1 },
        gateway: { replicas: 1 },
        keys: { enabled: false },
      };
    };

    it("installs the chart with helm install: every object of the release created", async () => {
      const file = join(dir, "values.yaml");
      await writeFile(file, stringify(values()));
      const installed = await helmRun([
        "install",
        RELEASE,
        CHART_DIR,
        "--namespace",
        NAMESPACE,
        "--create-namespace",
        "--values",
        file,
      ]);
      expect(installed.code, `${installed.stdout}\n${installed.stderr}`).toBe(0);
      // The chart's notes warn of values it does not use (a pool's size set where the autoscaler owns it): none here.
      expect(installed.stdout).not.toMatch(/WARNING/);
      const manifest = await helmRun(["get", "manifest", RELEASE, "--namespace", NAMESPACE]);
      const kinds = new Set(parseObjects(manifest.stdout).map((o) => o.kind));
      for (const kind of ["Deployment", "StatefulSet", "LightNodePool", "Service", "PodDisruptionBudget"])
        expect(kinds).toContain(kind);
    });

    it("runs the pool's light nodes (anvil) in containers: Running, Ready by the controller's gate, Healthy in kubectl", async () => {
      const running = await waitFor(
        async () => {
          const list = (await lightPods()).filter(
            (p) => ready(p) && condition(p, "lightfleet.io/in-sync") === "True",
          );
          return list.length === 2 ? list : undefined;
        },
        { timeoutMs: 180_000, intervalMs: 500, what: () => `two light nodes Ready${context()}` },
      );
      // Made by the StatefulSet of the pool, not by the test.
      for (const p of running) expect(p.metadata!.ownerReferences?.[0]?.kind).toBe("StatefulSet");
      const ip = running[0]!.status!.podIP!;
      // An address of the CNI bridge's subnet, given by host-local, not the host's.
      expect(ip.split(".").slice(0, 3).join(".")).toBe(bridge.hostIp.split(".").slice(0, 3).join("."));
      expect(ip).not.toBe(bridge.hostIp);
      const container = running[0]!.status!.containerStatuses![0]!.containerID!;
      expect(container).toMatch(/^containerd:\/\//);
      expect(await jsonRpc(`http://${ip}:8545`, "eth_chainId")).toBe(`0x${CHAIN_ID.toString(16)}`);
      // Its process is a container's: in a network namespace of its own, as uid 10001.
      const pid = await taskPid(container);
      const status = readFileSync(`/proc/${pid}/status`, "utf8");
      expect(/^Uid:\s+(\d+)/m.exec(status)?.[1]).toBe("10001");
      expect((await run("readlink", [`/proc/${pid}/ns/net`])).stdout).not.toBe(
        (await run("readlink", ["/proc/self/ns/net"])).stdout,
      );
      // The controller's health records, read as a user reads them.
      await waitFor(
        async () => {
          const got = await kubectlRun(["get", "lightnodes", "--namespace", NAMESPACE, "-o", "json"]);
          const items = (JSON.parse(got.stdout || "{}") as { items?: LightNode[] }).items ?? [];
          return items.length === 2 && items.every((n) => n.status?.state === "Healthy");
        },
        { timeoutMs: 60_000, intervalMs: 500, what: () => `both LightNodes Healthy${context()}` },
      );
      const table = await kubectlRun(["get", "lnp", "--namespace", NAMESPACE]);
      expect(table.code, table.stderr).toBe(0);
      const row = table.stdout
        .trim()
        .split("\n")
        .find((r) => r.startsWith(`${NETWORK} `))!
        .split(/\s+/);
      expect(row[2]).toBe("2/2");
    });

    it("runs the chart's gateway from the image: Ready by the chart's probes, answering JSON-RPC from the light nodes on its pod IP", async () => {
      const running = await waitReady(
        async () => (await pods("app.kubernetes.io/component=gateway"))[0],
        "the gateway pod",
      );
      const container = running.spec!.containers[0]!;
      expect(container.image).toBe(CHART_IMAGE);
      expect(container.securityContext).toMatchObject({ readOnlyRootFilesystem: true, runAsUser: 10001 });
      const url = `http://${running.status!.podIP!}:8545/${NETWORK}`;
      expect(await jsonRpc(url, "eth_chainId")).toBe(`0x${CHAIN_ID.toString(16)}`);
      // The devnet's chain, as mirrored onto the light nodes: a block past genesis.
      await waitFor(async () => Number(await jsonRpc(url, "eth_blockNumber")) >= 1, {
        timeoutMs: 30_000,
        intervalMs: 500,
        what: "the gateway to serve a block past genesis",
      });
      // The chart's security context, as runc applied it: uid 10001, no capabilities at all, no new privileges.
      const pid = await taskPid(running.status!.containerStatuses![0]!.containerID!);
      const status = readFileSync(`/proc/${pid}/status`, "utf8");
      expect(/^Uid:\s+(\d+)/m.exec(status)?.[1]).toBe("10001");
      expect(/^CapEff:\s+(\w+)/m.exec(status)?.[1]).toBe("0000000000000000");
      expect(/^CapBnd:\s+(\w+)/m.exec(status)?.[1]).toBe("0000000000000000");
      expect(/^NoNewPrivs:\s+(\d)/m.exec(status)?.[1]).toBe("1");
    });

    it("runs the chart's controller from the image: through the kubernetes Service as its service account, it holds the Lease", async () => {
      const running = await waitReady(
        async () => (await pods("app.kubernetes.io/component=controller"))[0],
        "the controller pod",
      );
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

    /** Both light nodes Ready and routed (their endpoints ready in the pool Service's slices), by name. */
    const routedPair = async () => {
      const settled = await waitFor(
        async () => {
          const list = (await lightPods()).filter((p) => !p.metadata!.deletionTimestamp && ready(p));
          if (list.length !== 2) return undefined;
          const addresses = await readyAddresses(`${RELEASE}-${NETWORK}`);
          return list.every((p) => addresses.includes(p.status!.podIP!)) ? list : undefined;
        },
        { timeoutMs: 120_000, intervalMs: 500, what: () => `both light nodes routed${context()}` },
      );
      return settled.sort((a, b) => a.metadata!.name!.localeCompare(b.metadata!.name!));
    };
    /** The states of the pod UID's endpoint in the pool's EndpointSlices after the first SINCE changes. */
    const endpointStates = (uid: string, since: number) =>
      routing!
        .sightings()
        .slice(since)
        .filter((e) => e.uid === uid);
    /** Unrouted while its pod still ran: not ready, not terminating (a pod is not ready before its first Ready too). */
    const UNROUTED = { ready: false, terminating: false };

    it("unroutes a lagging light node through the real EndpointSlice, keeps its container, and routes it again once it catches up", async () => {
      const service = `${RELEASE}-${NETWORK}`;
      const [laggard, other] = await routedPair();
      const name = laggard!.metadata!.name!;
      const uid = laggard!.metadata!.uid!;
      const container = laggard!.status!.containerStatuses![0]!.containerID!;
      // The devnet's block driver holds it 8 blocks behind: over maxLagBlocks (3), under restartLagBlocks (32).
      const since = routing!.sightings().length;
      await devnet.fault(name, { kind: "lag", blocks: 8 });
      await waitFor(
        async () => {
          const p = await pod(name);
          return (
            condition(p, "lightfleet.io/in-sync") === "False" &&
            !ready(p) &&
            !(await readyAddresses(service)).includes(p.status!.podIP!)
          );
        },
        { timeoutMs: 60_000, intervalMs: 250, what: () => `${name} unrouted${context()}` },
      );
      expect(endpointStates(uid, since)).toContainEqual(expect.objectContaining(UNROUTED));
      // The controller's record, as a user reads it: Lagging, unrouted, by more than maxLagBlocks.
      await waitFor(
        async () => {
          const status = (await lightNode(name)).status;
          return status?.state === "Lagging" && status.routed === false && (status.lagBlocks ?? 0) > 3;
        },
        { timeoutMs: 30_000, intervalMs: 250, what: () => `${name} Lagging in its LightNode${context()}` },
      );
      // Unrouted, not restarted: the same pod and container; the other node routed all along.
      const held = await pod(name);
      expect(held.metadata!.uid).toBe(uid);
      expect(held.status!.containerStatuses![0]!.containerID).toBe(container);
      expect(endpointStates(other!.metadata!.uid!, since)).not.toContainEqual(
        expect.objectContaining({ ready: false }),
      );
      await devnet.fault(name, { kind: "heal" });
      await waitFor(
        async () => {
          const node = await lightNode(name);
          return node.status?.state === "Healthy" && routing!.readyNow().includes(uid);
        },
        { timeoutMs: 60_000, intervalMs: 250, what: () => `${name} routed again${context()}` },
      );
      const back = await pod(name);
      expect(back.metadata!.uid).toBe(uid);
      expect(back.status!.containerStatuses![0]).toMatchObject({ containerID: container, restartCount: 0 });
      expect((await lightNode(name)).status?.restarts ?? 0).toBe(0);
    });

    it("unroutes a light node stopped in its container, evicts it, and the StatefulSet's new pod comes back Healthy in a new container; the other is untouched", async () => {
      const service = `${RELEASE}-${NETWORK}`;
      const [other, victim] = await routedPair();
      const name = victim!.metadata!.name!;
      const uid = victim!.metadata!.uid!;
      const container = victim!.status!.containerStatuses![0]!.containerID!;
      // The container's process stopped (SIGSTOP): it neither answers nor dies, and the kernel still accepts
      // connections on its port, so the kubelet's TCP probes pass; only the controller's JSON-RPC probes can tell.
      const pid = await taskPid(container);
      const since = routing!.sightings().length;
      process.kill(pid, "SIGSTOP");
      stopped.add(pid);
      const replacement = await waitFor(
        async () => (await lightPods()).find((p) => p.metadata!.name === name && p.metadata!.uid !== uid),
        { timeoutMs: 120_000, intervalMs: 250, what: () => `${name} evicted and recreated${context()}` },
      );
      // Evicted by the controller's service account through the Eviction API (the PDB lets unhealthy pods go).
      const evictions = (await plane.auditEvents()).filter(
        (e) => e.objectRef?.subresource === "eviction" && e.objectRef.name === name && e.verb === "create",
      );
      expect(evictions.some((e) => e.responseStatus?.code === 201)).toBe(true);
      expect(evictions.map((e) => e.user.username)).toContain(
        `system:serviceaccount:${NAMESPACE}:lightfleet-controller`,
      );
      // Unrouted first: the real EndpointSlice held its endpoint not ready while the pod was not yet terminating.
      expect(endpointStates(uid, since)).toContainEqual(expect.objectContaining(UNROUTED));
      // The new pod: a new container, on the chain again, Ready, routed and Healthy with the restart counted.
      const healthy = await waitFor(
        async () => {
          const node = await lightNode(name);
          const p = (await lightPods()).find((l) => l.metadata!.uid === replacement.metadata!.uid);
          const fresh =
            node.status?.state === "Healthy" &&
            (node.status.restarts ?? 0) >= 1 &&
            p !== undefined &&
            ready(p) &&
            routing!.readyNow().includes(p.metadata!.uid!);
          return fresh ? p : undefined;
        },
        { timeoutMs: 120_000, intervalMs: 500, what: () => `${name} Healthy again${context()}` },
      );
      const newContainer = healthy.status!.containerStatuses![0]!.containerID!;
      expect(newContainer).toMatch(/^containerd:\/\//);
      expect(newContainer).not.toBe(container);
      expect(await taskPid(newContainer)).not.toBe(pid);
      // The stopped process went with its container (the kubelet's SIGKILL ends a stopped process too).
      await waitFor(
        () => !existsSync(`/proc/${pid}`) || /^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, "utf8")),
        {
          timeoutMs: 30_000,
          intervalMs: 250,
          what: `the stopped process ${pid} gone`,
        },
      );
      stopped.delete(pid);
      // The other node: the same pod and container, never restarted, Healthy and routed all along.
      const untouched = await pod(other!.metadata!.name!);
      expect(untouched.metadata!.uid).toBe(other!.metadata!.uid);
      expect(untouched.status!.containerStatuses![0]).toMatchObject({
        containerID: other!.status!.containerStatuses![0]!.containerID,
        restartCount: 0,
      });
      expect((await lightNode(other!.metadata!.name!)).status?.state).toBe("Healthy");
      expect(await readyAddresses(service)).toContain(untouched.status!.podIP!);
      expect(endpointStates(other!.metadata!.uid!, since)).not.toContainEqual(
        expect.objectContaining({ ready: false }),
      );
    }, 300_000);

    it("passes helm test after the break: the hook pod runs in a container, calls the gateway by its Service name and Succeeds", async () => {
      const tested = await helmRun(["test", RELEASE, "--namespace", NAMESPACE, "--timeout", "90s"], 150_000);
      expect(tested.code, `${tested.stdout}\n${tested.stderr}${context()}`).toBe(0);
      expect(tested.stdout).toMatch(/TEST SUITE:\s+lightfleet-test-gateway[\s\S]*Phase:\s+Succeeded/);
      // The name it called was answered by cluster DNS (through the pod's resolv.conf, with its search domains).
      expect(dns.answered()).toContain(`lightfleet-gateway.${NAMESPACE}.svc.${CLUSTER_DOMAIN}`);
    });

    /** A bare pod of anvil with the given probe ports (no pool's: the controller and the attacher leave it be). */
    const anvilPod = (name: string, probePort = 8545, readinessPort = 8545): V1Pod => ({
      metadata: { name, labels: { "app.kubernetes.io/component": "probe-test" } },
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
      // The pool's light nodes' probes pass all along: never restarted by the kubelet.
      for (const p of await lightPods()) expect(p.status!.containerStatuses![0]!.restartCount).toBe(0);
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
