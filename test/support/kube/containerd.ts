import { execFile, spawn, type ChildProcess } from "node:child_process";
import { readFileSync, readdirSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { waitFor } from "../waitFor.js";

const run = promisify(execFile);

/** The containerd namespace the kubelet's CRI calls use. */
const K8S_NAMESPACE = "k8s.io";

export interface Containerd {
  /** The CRI endpoint, for the kubelet's `containerRuntimeEndpoint`. */
  endpoint: string;
  /** `ctr` in the k8s.io namespace of this containerd; resolves with stdout. */
  ctr(args: string[], timeoutMs?: number): Promise<string>;
  /** Recent output, for failure messages. */
  logs(): string;
  /** Kills and removes every task and container left, stops containerd and its shims. */
  stop(): Promise<void>;
}

/**
 * Debian's containerd with a configuration, root, state and sockets of its own under DIR, so it never meets the
 * machine's containerd (if any) nor another test's:
 * - the sandbox image is SANDBOXIMAGE, imported before any pod starts (no registry is reachable to pull one);
 * - `restrict_oom_score_adj`: this kind of host refuses to lower oom_score_adj, which runc otherwise tries for the
 *   kubelet's pods (it surfaces as "can't get final child's PID from pipe: EOF");
 * - CNI from CNICONFDIR with Debian's plugins, network namespaces mounted under the state directory;
 * - no AppArmor (these hosts run without it) and only the overlayfs and native snapshotters.
 */
export async function startContainerd(options: {
  dir: string;
  sandboxImage: string;
  cniConfDir: string;
  cniBinDir: string;
}): Promise<Containerd> {
  const { dir } = options;
  const socket = join(dir, "containerd.sock");
  const config = [
    "version = 2",
    `root = ${JSON.stringify(join(dir, "root"))}`,
    `state = ${JSON.stringify(join(dir, "state"))}`,
    `disabled_plugins = ${JSON.stringify([
      "io.containerd.snapshotter.v1.btrfs",
      "io.containerd.snapshotter.v1.aufs",
      "io.containerd.snapshotter.v1.zfs",
      "io.containerd.snapshotter.v1.devmapper",
      "io.containerd.internal.v1.opt",
      "io.containerd.tracing.processor.v1.otlp",
    ])}`,
    "[grpc]",
    `  address = ${JSON.stringify(socket)}`,
    "[ttrpc]",
    `  address = ${JSON.stringify(join(dir, "containerd-ttrpc.sock"))}`,
    "[debug]",
    '  address = ""',
    "[metrics]",
    '  address = ""',
    '[plugins."io.containerd.grpc.v1.cri"]',
    `  sandbox_image = ${JSON.stringify(options.sandboxImage)}`,
    "  restrict_oom_score_adj = true",
    "  disable_apparmor = true",
    "  netns_mounts_under_state_dir = true",
    '  [plugins."io.containerd.grpc.v1.cri".cni]',
    `    bin_dir = ${JSON.stringify(options.cniBinDir)}`,
    `    conf_dir = ${JSON.stringify(options.cniConfDir)}`,
    '  [plugins."io.containerd.grpc.v1.cri".containerd]',
    '    snapshotter = "overlayfs"',
    "",
  ].join("\n");
  const configFile = join(dir, "containerd.toml");
  await mkdir(dir, { recursive: true });
  await writeFile(configFile, config);
  const output: string[] = [];
  // Its own process group: the shims it starts are found by its socket, not by the group (they leave it).
  const child: ChildProcess = spawn("containerd", ["--config", configFile], {
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  const keep = (chunk: Buffer) => {
    output.push(chunk.toString());
    if (output.length > 300) output.splice(0, output.length - 300);
  };
  child.stdout!.on("data", keep);
  child.stderr!.on("data", keep);
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const ctr = async (args: string[], timeoutMs = 120_000) =>
    (
      await run("ctr", ["--address", socket, "--namespace", K8S_NAMESPACE, ...args], {
        timeout: timeoutMs,
        killSignal: "SIGKILL",
        maxBuffer: 16 * 1024 * 1024,
      })
    ).stdout;

  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      // Whatever the kubelet left: tasks first (a shim exits once its last task is deleted), then containers.
      const tasks = await ctr(["tasks", "ls", "-q"], 30_000).catch(() => "");
      for (const id of tasks.split("\n").filter(Boolean))
        await ctr(["tasks", "delete", "--force", id], 30_000).catch(() => undefined);
      const containers = await ctr(["containers", "ls", "-q"], 30_000).catch(() => "");
      for (const id of containers.split("\n").filter(Boolean))
        await ctr(["containers", "delete", id], 30_000).catch(() => undefined);
      process.kill(-child.pid!, "SIGTERM");
      const timer = setTimeout(() => process.kill(-child.pid!, "SIGKILL"), 10_000);
      await exited;
      clearTimeout(timer);
    }
    // A shim whose task could not be deleted outlives containerd: it names this containerd's socket.
    for (const pid of shimsOf(socket)) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // gone meanwhile
      }
    }
    await waitFor(() => shimsOf(socket).length === 0, {
      timeoutMs: 15_000,
      intervalMs: 100,
      what: `the shims of ${socket} to exit`,
    });
  };

  try {
    await waitFor(() => ctr(["version"], 10_000).then(() => true), {
      timeoutMs: 60_000,
      intervalMs: 200,
      what: () => `containerd to serve ${socket}:\n${output.join("").slice(-3000)}`,
    });
  } catch (error) {
    await stop().catch(() => undefined);
    throw error;
  }
  return { endpoint: `unix://${socket}`, ctr, logs: () => output.join("").slice(-5000), stop };
}

/** Pids of containerd-shim-runc-v2 processes serving the containerd at SOCKET. */
function shimsOf(socket: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const args = readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0");
      if (args[0]?.endsWith("containerd-shim-runc-v2") && args.includes(socket)) pids.push(Number(entry));
    } catch {
      // exited while listed
    }
  }
  return pids;
}

/**
 * Unmounts everything mounted under DIR (the kubelet's volume tmpfs, containerd's network namespaces and rootfs
 * mounts), deepest first, so the directory can be removed.
 */
export async function unmountUnder(dir: string): Promise<void> {
  const mounts = readFileSync("/proc/self/mountinfo", "utf8")
    .split("\n")
    .map((line) => line.split(" ")[4])
    .filter((path): path is string => path !== undefined && (path === dir || path.startsWith(`${dir}/`)))
    .sort((a, b) => b.length - a.length);
  for (const path of mounts) await run("umount", ["-l", path]).catch(() => undefined);
}
