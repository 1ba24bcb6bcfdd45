import { execFile } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { mkdir, open, rename, rm, stat } from "node:fs/promises";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import { runGo } from "../goCommand.js";
import { waitFor } from "../waitFor.js";
import { lightfleetCacheDir } from "../cacheDir.js";

const run = promisify(execFile);

/** The Go module that pins the control plane (k8s.io/kubernetes and etcd); see its tools.go. */
export const CONTROL_PLANE_MODULE = findModule(import.meta.dirname);

/** Found upwards from this file, which also runs compiled from node_modules/.cache (bench:controller). */
function findModule(from: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    const candidate = join(dir, "test/kube/controlplane");
    if (existsSync(join(candidate, "go.mod"))) return candidate;
    if (dirname(dir) === dir) throw new Error(`test/kube/controlplane/go.mod not found above ${from}`);
  }
}

export interface ControlPlaneBinaries {
  etcd: string;
  kubeApiserver: string;
  kubeControllerManager: string;
  /** Runs pods in real containers (through containerd) in test/kube/realKubelet.test.ts. */
  kubelet: string;
  kubernetesVersion: string;
}

/** In build order; `coldMinutes` is an estimate for the progress log (the whole measured at about 20 min on 2 loaded cores). */
const COMMANDS = [
  { key: "etcd", file: "etcd", pkg: "go.etcd.io/etcd/server/v3", coldMinutes: 4 },
  {
    key: "kubeApiserver",
    file: "kube-apiserver",
    pkg: "k8s.io/kubernetes/cmd/kube-apiserver",
    coldMinutes: 12,
  },
  {
    key: "kubeControllerManager",
    file: "kube-controller-manager",
    pkg: "k8s.io/kubernetes/cmd/kube-controller-manager",
    coldMinutes: 3,
  },
  // Shares most of its packages with the two above, so Go's build cache makes it the cheap last step (about 50 s).
  { key: "kubelet", file: "kubelet", pkg: "k8s.io/kubernetes/cmd/kubelet", coldMinutes: 1 },
] as const;

/** The versions go.mod pins: the cache is keyed by them, so a version bump builds anew. */
export function pinnedVersions(): { kubernetes: string; etcd: string } {
  const goMod = readFileSync(join(CONTROL_PLANE_MODULE, "go.mod"), "utf8");
  const version = (module: string) => {
    const match = new RegExp(`^\\s*${module.replaceAll(".", "\\.")}\\s+(v\\S+)`, "m").exec(goMod);
    if (!match) throw new Error(`${CONTROL_PLANE_MODULE}/go.mod does not require ${module}`);
    return match[1]!;
  };
  return { kubernetes: version("k8s.io/kubernetes"), etcd: version("go.etcd.io/etcd/server/v3") };
}

/** Outside the work tree, so a clean clone reuses what an earlier run built; never committed. */
export function controlPlaneCacheDir(): string {
  const base = lightfleetCacheDir();
  const { kubernetes, etcd } = pinnedVersions();
  return join(base, "controlplane", `kubernetes-${kubernetes}-etcd-${etcd}`);
}

/** The binaries when all are built, or undefined. */
export function builtControlPlane(): ControlPlaneBinaries | undefined {
  const dir = controlPlaneCacheDir();
  const paths = Object.fromEntries(COMMANDS.map((c) => [c.key, join(dir, c.file)]));
  if (!COMMANDS.every((c) => existsSync(paths[c.key]!))) return undefined;
  return {
    ...(paths as Omit<ControlPlaneBinaries, "kubernetesVersion">),
    kubernetesVersion: pinnedVersions().kubernetes,
  };
}

/** Why the control plane cannot be built here, or undefined when Go is on PATH. */
export async function missingGo(): Promise<string | undefined> {
  try {
    await run("go", ["version"]);
    return undefined;
  } catch {
    return "go not found: the real Kubernetes tests build kube-apiserver, kube-controller-manager, etcd and the kubelet with Go 1.24 or later (npm test builds them once into ~/.cache/lightfleet)";
  }
}

/**
 * Builds the control plane once per pinned version into the cache (several minutes on 2 cores the first time, then
 * nothing). A lock file keeps concurrent callers (test files, `npm test`'s build step) from building twice.
 */
export async function ensureControlPlane(
  log: (line: string) => void = () => undefined,
): Promise<ControlPlaneBinaries> {
  const ready = builtControlPlane();
  if (ready) return ready;
  const goMissing = await missingGo();
  if (goMissing) throw new Error(goMissing);
  const dir = controlPlaneCacheDir();
  await mkdir(dir, { recursive: true });
  const lockPath = join(dir, ".lock");
  const lock = await acquireLock(lockPath);
  try {
    const { kubernetes } = pinnedVersions();
    const minor = /^v(\d+)\.(\d+)/.exec(kubernetes)!;
    const ldflags = [
      `-X k8s.io/component-base/version.gitVersion=${kubernetes}`,
      `-X k8s.io/component-base/version.gitMajor=${minor[1]}`,
      `-X k8s.io/component-base/version.gitMinor=${minor[2]}`,
      "-X k8s.io/component-base/version.gitTreeState=clean",
      "-s -w",
    ].join(" ");
    for (const command of COMMANDS) {
      const target = join(dir, command.file);
      if (existsSync(target)) continue;
      const started = Date.now();
      log(
        `building ${command.file} ${kubernetes} (${command.pkg}) into ${dir} (cold: about ${command.coldMinutes} min) ...`,
      );
      const partial = `${target}.partial`;
      await goBuild(["build", "-trimpath", "-ldflags", ldflags, "-o", partial, command.pkg]);
      await rename(partial, target);
      log(`built ${command.file} in ${Math.round((Date.now() - started) / 1000)} s`);
    }
  } finally {
    await lock.release();
  }
  return builtControlPlane()!;
}

function goBuild(args: string[]): Promise<void> {
  return runGo(args, CONTROL_PLANE_MODULE, { GOFLAGS: "-mod=readonly", CGO_ENABLED: "0" });
}

/** An exclusive lock file; a lock left by a dead build (older than an hour) is taken over. */
export async function acquireLock(path: string): Promise<{ release(): Promise<void> }> {
  await waitFor(
    async () => {
      try {
        const handle = await open(path, "wx");
        await handle.writeFile(String(process.pid));
        await handle.close();
        return true;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
        const info = await stat(path).catch(() => undefined);
        if (info && Date.now() - info.mtimeMs > 3_600_000) await rm(path, { force: true });
        return false;
      }
    },
    { timeoutMs: 60 * 60_000, intervalMs: 1_000, what: `the control plane build lock ${path}` },
  );
  return { release: () => rm(path, { force: true }) };
}
