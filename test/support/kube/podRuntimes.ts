import type { ChildProcess } from "node:child_process";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer, connect, type Socket } from "node:net";
import { constants } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { CoreV1Api, type V1Container, type V1EnvVar, type V1Pod } from "@kubernetes/client-node";
import { startAnvil } from "../../../src/devnet/anvil.js";
import type { Devnet } from "../../../src/devnet/devnet.js";
import { freePort } from "../../../src/process/freePort.js";
import { spawnChild, stopChild } from "../../../src/process/spawnChild.js";
import { silentLogger } from "../../../src/log/logger.js";
import { ROOT } from "../runCli.js";
import type { ControlPlane } from "./controlPlane.js";
import type { PodNetwork } from "./podNetwork.js";
import type { PodRuntime, RunningPod } from "./kubeletStandIn.js";
import { clusterDnsModule, type ServiceProxy } from "./serviceProxy.js";

/** tsx's loader, imported into the one node process (its CLI would run the program in a child, out of reach of signals). */
const TSX_LOADER = pathToFileURL(join(ROOT, "node_modules/tsx/dist/loader.mjs")).href;

/**
 * Light-node pods: whatever client image the pod names, an anvil listens on the pod IP at the container's first
 * port, inside the pod network, and follows the devnet network named by the pod's `lightfleet.io/network` label (the
 * devnet's block driver mirrors every block onto it and applies faults, as for the devnet's own light nodes).
 */
export function anvilPodRuntime(
  devnet: Devnet,
  podNetwork: PodNetwork,
  chainIds: Map<string, number>,
): PodRuntime {
  // Which start attached the devnet node of each name: a replaced pod's late stop must not detach its successor's.
  const attachedBy = new Map<string, object>();
  return {
    async start(pod, podIp) {
      const network = pod.metadata!.labels?.["lightfleet.io/network"];
      if (!network || !chainIds.has(network))
        throw new Error(`no devnet network for pod label lightfleet.io/network=${network}`);
      const port = pod.spec!.containers[0]!.ports?.[0]?.containerPort ?? 8545;
      const name = pod.metadata!.name!;
      const node = await startAnvil({
        name,
        chainId: chainIds.get(network)!,
        timestamp: devnet.genesisTimestamp,
        noMining: true,
        host: podIp,
        port,
        launcher: ["ip", "netns", "exec", podNetwork.namespace],
      });
      let exited = false;
      node.process.once("exit", () => (exited = true));
      // anvil serves HTTP and WebSocket on one port; a client with a separate ws port gets it forwarded to that one.
      const wsPort = pod.spec!.containers[0]!.ports?.find((p) => p.name === "ws")?.containerPort;
      const forwarder =
        wsPort !== undefined && wsPort !== port
          ? startForwarder(podNetwork, podIp, wsPort, port, name)
          : undefined;
      // A pod of the same name from before (a StatefulSet's recreated pod) is a new node to the devnet.
      try {
        devnet.detach(name);
      } catch {
        // not attached
      }
      const self = {};
      attachedBy.set(name, self);
      try {
        await devnet.attach({
          name,
          network,
          httpUrl: node.httpUrl,
          kill: () => node.process.kill("SIGKILL"),
        });
      } catch (error) {
        if (attachedBy.get(name) === self) attachedBy.delete(name);
        if (forwarder) await stopChild(forwarder, 0);
        await node.stop();
        throw error;
      }
      return {
        signal: (signal) => node.process.kill(signal),
        exited: () => exited,
        async stop(graceMs) {
          if (attachedBy.get(name) === self) {
            attachedBy.delete(name);
            try {
              devnet.detach(name);
            } catch {
              // detached already
            }
          }
          if (forwarder) await stopChild(forwarder, 0);
          await stopChild(node.process, graceMs);
        },
      };
    },
  };
}

/**
 * Pods of lightfleet's own image (controller, gateway, key API): the container's command runs here as a process from
 * the source tree, as the kubelet would run it in the image, with
 * - the pod's service account token from the TokenRequest API, bound to the pod, in a kubeconfig (KUBECONFIG), so
 *   every API call is authorised by the chart's RBAC exactly as in a cluster;
 * - its configMap, secret and emptyDir volumes materialised under a directory of the pod's own, and paths under their
 *   mount points rewritten to it;
 * - `--port` and `--admin-port` on free ports (every such pod shares the host's network namespace here), resolved for
 *   probes through the container's port names, and each container port forwarded from the pod's own IP to them, so
 *   what reaches the pod at the address and port its EndpointSlices advertise (the controller's scrape of a gateway
 *   pod's /metrics, the Service proxy) reaches the process.
 */
export function lightfleetPodRuntime(
  plane: ControlPlane,
  options: { log?: (line: string) => void } = {},
): PodRuntime {
  const core = plane.admin().makeApiClient(CoreV1Api);
  return {
    async start(pod, podIp) {
      const container = pod.spec!.containers[0]!;
      const dir = await mkdtemp(join(plane.dir, `pod-${pod.metadata!.name}-`));
      const mounts = await materialiseVolumes(core, pod, container, dir);
      const rewrite = (value: string) => {
        for (const [mountPath, local] of mounts) {
          if (value === mountPath || value.startsWith(`${mountPath}/`))
            return local + value.slice(mountPath.length);
        }
        return value;
      };
      const ports = new Map<string, number>();
      const args = [...(container.command ?? []), ...(container.args ?? [])].map(rewrite);
      const adminPort = await freePort();
      args.push("--admin-port", String(adminPort));
      for (const p of container.ports ?? []) if (p.name === "admin") ports.set("admin", adminPort);
      if (args[0] === "gateway" || args[0] === "keys-api") {
        const publicPort = await freePort();
        args.push("--port", String(publicPort));
        for (const p of container.ports ?? [])
          if (p.name && p.name !== "admin") ports.set(p.name, publicPort);
      }
      const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: dir, NODE_ENV: "production" };
      for (const variable of container.env ?? [])
        env[variable.name] = rewrite(await envValue(core, pod, podIp, variable));
      if (pod.spec!.automountServiceAccountToken !== false) {
        const serviceAccount = pod.spec!.serviceAccountName ?? "default";
        const token = await plane.serviceAccountToken(pod.metadata!.namespace!, serviceAccount, {
          name: pod.metadata!.name!,
          uid: pod.metadata!.uid!,
        });
        env.KUBECONFIG = (await plane.withToken(token, `${pod.metadata!.name}-${serviceAccount}`)).file;
      } else {
        env.KUBECONFIG = join(dir, "no-credentials");
      }
      const { child, exitCode } = runNode(
        pod,
        ["--import", TSX_LOADER, join(ROOT, "src/cli.ts"), ...args],
        env,
        dir,
        options.log,
      );
      const forwarders = await Promise.all(
        (container.ports ?? [])
          .filter((p) => p.name && ports.has(p.name))
          .map((p) => forward(podIp, p.containerPort, ports.get(p.name!)!)),
      ).catch(async (error: Error) => {
        await stopChild(child, 0);
        throw error;
      });
      return {
        resolvePort: (port) => {
          const number = typeof port === "number" ? port : ports.get(port);
          return number === undefined ? undefined : { host: "127.0.0.1", port: number };
        },
        signal: (signal) => child.kill(signal),
        exited: () => exitCode() !== undefined,
        exitCode,
        async stop(graceMs) {
          await Promise.all(forwarders.map((close) => close()));
          await stopChild(child, graceMs);
          await rm(dir, { recursive: true, force: true });
        },
      } satisfies RunningPod;
    },
  };
}

/**
 * Pods of lightfleet's image whose command is `node` (the chart's `helm test` pods): node runs the script here with
 * the container's env, and cluster DNS's names for Services resolve to their ClusterIPs, which the Service proxy
 * serves. Such pods mount no service account token (the chart's test pods ask for none).
 */
export function nodeScriptPodRuntime(
  plane: ControlPlane,
  serviceProxy: ServiceProxy,
  options: { log?: (line: string) => void } = {},
): PodRuntime {
  const core = plane.admin().makeApiClient(CoreV1Api);
  return {
    async start(pod, podIp) {
      const container = pod.spec!.containers[0]!;
      const [command, ...args] = [...(container.command ?? []), ...(container.args ?? [])];
      if (command !== "node") throw new Error(`not a node script: ${command}`);
      if (pod.spec!.automountServiceAccountToken !== false)
        throw new Error(
          "node script pods run here without a service account token: set automountServiceAccountToken: false",
        );
      const hosts = await serviceProxy.sync(pod.metadata!.namespace!);
      const dir = await mkdtemp(join(plane.dir, `pod-${pod.metadata!.name}-`));
      const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: dir };
      for (const variable of container.env ?? [])
        env[variable.name] = await envValue(core, pod, podIp, variable);
      const { child, exitCode } = runNode(
        pod,
        ["--import", clusterDnsModule(hosts), ...args],
        env,
        dir,
        options.log,
      );
      return {
        signal: (signal) => child.kill(signal),
        exited: () => exitCode() !== undefined,
        exitCode,
        async stop(graceMs) {
          await stopChild(child, graceMs);
          await rm(dir, { recursive: true, force: true });
        },
      } satisfies RunningPod;
    },
  };
}

/** Runs a pod's container as node with `args`; its exit code, once it has exited, as the kubelet reports it. */
function runNode(
  pod: V1Pod,
  args: string[],
  env: NodeJS.ProcessEnv,
  dir: string,
  log: ((line: string) => void) | undefined,
): { child: ChildProcess; exitCode: () => number | undefined } {
  const child = spawnChild({
    command: process.execPath,
    args,
    name: pod.metadata!.name!,
    logger: silentLogger(),
    env,
    cwd: dir,
    onLine: (line) => log?.(`${pod.metadata!.name}: ${line}`),
  });
  let exitCode: number | undefined;
  child.once("exit", (code, signal) => (exitCode = code ?? 128 + signalNumber(signal)));
  return { child, exitCode: () => exitCode };
}

/** A container's exit code after a signal, as the kubelet reports it (128 + the signal's number). */
function signalNumber(signal: NodeJS.Signals | null): number {
  return signal ? (constants.signals[signal] ?? 0) : 0;
}

/** Forwards podIp:port to 127.0.0.1:target (a container port on the pod's own IP); returns its close. */
async function forward(podIp: string, port: number, target: number): Promise<() => Promise<void>> {
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect(target, "127.0.0.1");
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.once("close", () => sockets.delete(socket));
    }
    client.on("error", () => upstream.destroy());
    upstream.on("error", () => client.resetAndDestroy());
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, podIp, () => resolve());
  });
  return async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => server.close(resolve));
  };
}

async function materialiseVolumes(
  core: CoreV1Api,
  pod: V1Pod,
  container: V1Container,
  dir: string,
): Promise<Array<[string, string]>> {
  const namespace = pod.metadata!.namespace!;
  const mounts: Array<[string, string]> = [];
  for (const mount of container.volumeMounts ?? []) {
    const volume = pod.spec!.volumes?.find((v) => v.name === mount.name);
    const local = join(dir, "volumes", mount.name);
    await mkdir(local, { recursive: true });
    if (volume?.configMap) {
      const cm = await core.readNamespacedConfigMap({ name: volume.configMap.name!, namespace });
      for (const [key, value] of Object.entries(cm.data ?? {})) await writeFile(join(local, key), value);
    } else if (volume?.secret) {
      const secret = await core.readNamespacedSecret({ name: volume.secret.secretName!, namespace });
      for (const [key, value] of Object.entries(secret.data ?? {}))
        await writeFile(join(local, key), Buffer.from(value, "base64"), { mode: 0o600 });
    }
    mounts.push([mount.mountPath.replace(/\/$/, ""), local]);
  }
  // Longest mount path first, so /data/x is not taken for /data.
  return mounts.sort((a, b) => b[0].length - a[0].length);
}

async function envValue(core: CoreV1Api, pod: V1Pod, podIp: string, variable: V1EnvVar): Promise<string> {
  if (variable.value !== undefined) return variable.value;
  const from = variable.valueFrom;
  const namespace = pod.metadata!.namespace!;
  if (from?.fieldRef) {
    const fields: Record<string, string | undefined> = {
      "metadata.name": pod.metadata!.name,
      "metadata.namespace": namespace,
      "metadata.uid": pod.metadata!.uid,
      "spec.nodeName": pod.spec!.nodeName,
      "spec.serviceAccountName": pod.spec!.serviceAccountName,
      "status.podIP": podIp,
    };
    return fields[from.fieldRef.fieldPath] ?? "";
  }
  if (from?.secretKeyRef) {
    const secret = await core.readNamespacedSecret({ name: from.secretKeyRef.name!, namespace });
    return Buffer.from(secret.data?.[from.secretKeyRef.key] ?? "", "base64").toString();
  }
  if (from?.configMapKeyRef) {
    const cm = await core.readNamespacedConfigMap({ name: from.configMapKeyRef.name!, namespace });
    return cm.data?.[from.configMapKeyRef.key] ?? "";
  }
  return "";
}

/** A TCP forwarder inside the pod network from podIp:from to podIp:to (node's net module, nothing else). */
function startForwarder(
  podNetwork: PodNetwork,
  podIp: string,
  from: number,
  to: number,
  name: string,
): ChildProcess {
  const script = `const net=require("net");net.createServer(c=>{const u=net.connect(${to},"${podIp}");c.pipe(u).pipe(c);c.on("error",()=>u.destroy());u.on("error",()=>c.destroy())}).listen(${from},"${podIp}")`;
  const { command, args } = podNetwork.exec(process.execPath, ["-e", script]);
  return spawnChild({ command, args, name: `${name}-ws`, logger: silentLogger() });
}
