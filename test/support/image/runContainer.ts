import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stringify } from "yaml";
import { jsonLogLines } from "../jsonLogLines.js";
import { chartConfig, podmanRunFlags, type ChartContainer } from "./chartPod.js";
import { podman, podmanGlobalArgs, ULIMITS } from "./podman.js";

/** A container name unique to this run: several test runs share the machine and the image store. */
export function containerName(what: string): string {
  return `lightfleet-test-${what}-${process.pid}-${randomBytes(3).toString("hex")}`;
}

/**
 * Runs IMAGE with ARGS (after FLAGS, with no network unless FLAGS say otherwise) to the end and collects its output;
 * INPUT goes to its stdin. The container is removed either way.
 */
export function runImage(
  image: string,
  args: string[],
  options: { flags?: string[]; timeoutMs?: number; input?: string } = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const name = containerName("run");
  return new Promise((resolve, reject) => {
    const child = spawn(
      "podman",
      [
        ...podmanGlobalArgs(),
        "run",
        "--rm",
        "--pull",
        "never",
        "--name",
        name,
        "--network",
        "none",
        ...(options.input !== undefined ? ["--interactive"] : []),
        ...ULIMITS,
        ...(options.flags ?? []),
        image,
        ...args,
      ],
      { stdio: ["pipe", "pipe", "pipe"] },
    );
    child.stdin.end(options.input ?? "");
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
    child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
    const timer = setTimeout(() => {
      void podman(["rm", "--force", "--ignore", name]).catch(() => {});
      reject(new Error(`${image} ${args.join(" ")} did not finish within ${options.timeoutMs ?? 60_000} ms`));
    }, options.timeoutMs ?? 60_000);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** A host directory as the kubelet makes a writable volume with fsGroup: group-owned by it, group-writable, setgid. */
function fsGroupDir(path: string, fsGroup: number | undefined): string {
  mkdirSync(path, { recursive: true });
  chownSync(path, 0, fsGroup ?? 0);
  chmodSync(path, 0o2775);
  return path;
}

/** The host directories behind a pod's volumes, by volume name, made as a kubelet makes them. */
export interface PodVolumes {
  volumes: Record<string, string>;
  remove(): void;
}

/**
 * Host directories for CONTAINER's volumes: each ConfigMap's files (lightfleet.yaml passed through CONFIGURE), and
 * an empty directory for every other volume (emptyDir or PersistentVolumeClaim), with the pod's fsGroup applied.
 */
export function podVolumes(
  container: ChartContainer,
  configure: (config: Record<string, unknown>) => Record<string, unknown> = (c) => c,
): PodVolumes {
  const dir = mkdtempSync(join(tmpdir(), `lightfleet-pod-${container.name}-`));
  chmodSync(dir, 0o755);
  const volumes: Record<string, string> = {};
  for (const volume of container.volumes) {
    const path = join(dir, volume.name);
    if (volume.configMap) {
      // A ConfigMap volume: root-owned files anyone may read.
      mkdirSync(path, { mode: 0o755 });
      for (const [file, text] of Object.entries(container.configMaps[volume.name] ?? {})) {
        const content = file === "lightfleet.yaml" ? stringify(configure(chartConfig(container))) : text;
        writeFileSync(join(path, file), content, { mode: 0o644 });
      }
      chmodSync(path, 0o755);
      volumes[volume.name] = path;
    } else volumes[volume.name] = fsGroupDir(path, container.podSecurityContext.fsGroup);
  }
  return { volumes, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** A chart component running in a container from the image, as its pod spec runs it. */
export interface ChartPod {
  container: ChartContainer;
  name: string;
  /** What it has written to stdout and stderr so far. */
  output(): string;
  /** The JSON log lines (stdout) so far. */
  logLines(): Array<Record<string, unknown>>;
  exitCode(): number | null | undefined;
  /** `podman stop` (SIGTERM, then SIGKILL after GRACE seconds) and the container's exit code. */
  stop(graceSeconds?: number): Promise<number | null>;
  /** Removes the container if it is still there. */
  remove(): Promise<void>;
}

/**
 * Starts CONTAINER (from chartContainer: the chart's args, environment, security context and volume mounts) from
 * IMAGE on VOLUMES (podVolumes). The tests use host networking (to reach the simulated API server or an anvil on
 * 127.0.0.1), so their configs move its listeners to 127.0.0.1 on ephemeral ports. EXTRAMOUNTS adds read-only host
 * directories (e.g. a kubeconfig).
 */
export function startChartPod(
  image: string,
  container: ChartContainer,
  volumes: Record<string, string>,
  options: {
    secrets?: Record<string, string>;
    extraMounts?: Array<{ host: string; path: string }>;
    env?: Record<string, string>;
  } = {},
): ChartPod {
  const component = container.name;
  const name = containerName(component);
  const child = spawn(
    "podman",
    [
      ...podmanGlobalArgs(),
      "run",
      "--rm",
      "--pull",
      "never",
      "--name",
      name,
      "--network",
      "host",
      ...ULIMITS,
      ...podmanRunFlags(container, volumes, options.secrets),
      ...(options.extraMounts ?? []).flatMap((m) => ["--volume", `${m.host}:${m.path}:ro`]),
      ...Object.entries(options.env ?? {}).flatMap(([k, v]) => ["--env", `${k}=${v}`]),
      image,
      ...container.args,
    ],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  let output = "";
  const logLines = jsonLogLines(child.stdout);
  child.stdout.on("data", (c: Buffer) => (output += c.toString()));
  child.stderr.on("data", (c: Buffer) => (output += c.toString()));
  let code: number | null | undefined;
  const exited = new Promise<number | null>((resolve) =>
    child.once("close", (c) => {
      code = c;
      resolve(c);
    }),
  );
  return {
    container,
    name,
    output: () => output,
    logLines,
    exitCode: () => code,
    async stop(graceSeconds = 15) {
      if (code === undefined) await podman(["stop", "--ignore", "--time", String(graceSeconds), name]);
      return exited;
    },
    async remove() {
      await podman(["rm", "--force", "--ignore", name]).catch(() => {});
      if (code === undefined) {
        child.kill("SIGKILL");
        await exited;
      }
    },
  };
}
