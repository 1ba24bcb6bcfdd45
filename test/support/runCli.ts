import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { parseLogLines } from "./jsonLogLines.js";
import { join } from "node:path";
import { waitFor } from "./waitFor.js";

export const ROOT = join(import.meta.dirname, "../..");

/**
 * `node --import tsx src/cli.ts ARGS`: tsx as a loader inside the one node process. (tsx's own CLI would run the
 * program in a child of its wrapper, and a SIGKILL would stop only the wrapper, leaving the program running.)
 */
export function cliArgs(args: string[]): string[] {
  return ["--import", "tsx", join(ROOT, "src/cli.ts"), ...args];
}

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `lightfleet ARGS` from source (no build needed) and collects its output. */
export function runCli(
  args: string[],
  options: { input?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number } = {},
): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, cliArgs(args), {
      cwd: ROOT,
      env: { ...process.env, ...options.env },
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(
        new Error(`lightfleet ${args.join(" ")} did not finish within ${options.timeoutMs ?? 30_000} ms`),
      );
    }, options.timeoutMs ?? 30_000);
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    child.stdin.end(options.input ?? "");
  });
}

/**
 * Runs `node ARGS` (a pod's script, as its container would run it) to the end, or kills it after TIMEOUTMS; its exit
 * code and its stdout and stderr as one text, in the order written.
 */
export function runNodeScript(
  args: string[],
  options: { env?: NodeJS.ProcessEnv; timeoutMs?: number } = {},
): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, {
      env: options.env ?? process.env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.on("data", (c: Buffer) => (output += c.toString()));
    child.stderr.on("data", (c: Buffer) => (output += c.toString()));
    const timer = setTimeout(() => child.kill("SIGKILL"), options.timeoutMs ?? 30_000);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

/** A `lightfleet gateway` child process, once it has printed where it serves. */
export interface SpawnedGateway {
  child: ChildProcessWithoutNullStreams;
  url: string;
  admin: string;
  /** Everything it has written to stdout so far. */
  stdout(): string;
}

/**
 * Starts `lightfleet gateway --config FILE` on ephemeral ports (JSON logs) and waits for its "gateway serving" line;
 * `port` fixes the public port (a gateway restarted behind a balancer keeps its address).
 */
export async function spawnGateway(
  config: string,
  env: NodeJS.ProcessEnv = {},
  port = 0,
): Promise<SpawnedGateway> {
  const child = spawn(
    process.execPath,
    cliArgs(["gateway", "--config", config, "--port", String(port), "--admin-port", "0"]),
    { cwd: ROOT, env: { ...process.env, ...env } },
  );
  let stdout = "";
  child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  try {
    const serving = await waitFor(
      () =>
        parseLogLines<{ msg?: string; url: string; admin: string }>(stdout).find((line) =>
          line.msg?.includes("gateway serving"),
        ),
      { what: "the gateway's serving line", timeoutMs: 30_000 },
    );
    return { child, ...serving, stdout: () => stdout };
  } catch (error) {
    child.kill("SIGKILL");
    throw error;
  }
}
