import { execFile, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { join } from "node:path";
import { promisify } from "node:util";
import { lightfleetCacheDir } from "../cacheDir.js";

const run = promisify(execFile);

/** Everything the image tooling keeps (base, image store): outside the work tree, never committed. */
export function imageCacheDir(): string {
  return join(lightfleetCacheDir(), "image");
}

/**
 * runc, not Debian's default crun: crun refuses this kind of host's hybrid cgroups. The limits are explicit because
 * without them the runtime fails setting RLIMIT_NOFILE from the host's unlimited value.
 */
export const RUNTIME = "/usr/sbin/runc";
export const ULIMITS = ["--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024"];

/**
 * Podman's global flags: its own image store under the cache (so `npm test` on a clean clone finds what an earlier run
 * built, and nothing mixes with other images on the machine) and runc as the runtime.
 */
export function podmanGlobalArgs(): string[] {
  const root = join(imageCacheDir(), "storage");
  // The run root holds locks and mount state: per store, on tmpfs, shared by every process using that store.
  const runRoot = `/run/lightfleet-podman-${createHash("sha256").update(root).digest("hex").slice(0, 12)}`;
  return ["--root", root, "--runroot", runRoot, "--runtime", RUNTIME];
}

/** Runs `podman ARGS` against the cache's store and returns its stdout; stderr is in the error when it fails. */
export async function podman(args: string[], options: { timeoutMs?: number } = {}): Promise<string> {
  const { stdout } = await run("podman", [...podmanGlobalArgs(), ...args], {
    maxBuffer: 64 * 1024 * 1024,
    timeout: options.timeoutMs ?? 120_000,
    killSignal: "SIGKILL",
  });
  return stdout;
}

/** Runs `podman ARGS`, passing each output line to `progress`; rejects with the last lines when it fails. */
export function podmanStreaming(args: string[], progress: (line: string) => void): Promise<void> {
  return streaming("podman", [...podmanGlobalArgs(), ...args], progress);
}

/** Runs a command, passing each line of its stdout and stderr to `progress`. */
export function streaming(command: string, args: string[], progress: (line: string) => void): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ["ignore", "pipe", "pipe"] });
    const tail: string[] = [];
    const onData = (buffered: { text: string }) => (chunk: Buffer) => {
      buffered.text += chunk.toString();
      const lines = buffered.text.split("\n");
      buffered.text = lines.pop() ?? "";
      for (const line of lines) {
        tail.push(line);
        if (tail.length > 30) tail.shift();
        progress(line);
      }
    };
    child.stdout.on("data", onData({ text: "" }));
    child.stderr.on("data", onData({ text: "" }));
    child.on("error", reject);
    child.on("close", (code) =>
      code === 0
        ? resolve()
        : reject(new Error(`${command} ${args.join(" ")} exited ${code}:\n${tail.join("\n")}`)),
    );
  });
}

/** Why containers cannot run here, or undefined when podman and runc are installed. */
export async function missingPodman(): Promise<string | undefined> {
  for (const command of ["podman", RUNTIME, "debootstrap"]) {
    try {
      await run("sh", ["-c", `command -v ${command}`]);
    } catch {
      return `${command} not found: apt-get install podman runc debootstrap (.ci/run installs them); then npm run image builds the image into ${imageCacheDir()}`;
    }
  }
  return undefined;
}
