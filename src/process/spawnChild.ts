import { spawn, spawnSync } from "node:child_process";
import type { ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";
import type { Logger } from "../log/logger.js";

let pdeathsigAvailable: boolean | undefined;

/**
 * Whether `setpriv --pdeathsig` (util-linux) can be used: it makes the kernel kill the child when this process dies,
 * even by SIGKILL, so no child outlives its supervisor.
 */
function canUsePdeathsig(): boolean {
  if (pdeathsigAvailable === undefined) {
    pdeathsigAvailable =
      process.platform === "linux" && spawnSync("setpriv", ["--pdeathsig", "KILL", "true"]).status === 0;
  }
  return pdeathsigAvailable;
}

export interface SpawnChildOptions {
  command: string;
  args: string[];
  /** Member name, attached to every line the child prints. */
  name: string;
  logger: Logger;
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** Called with each output line (after it is logged). */
  onLine?: (line: string) => void;
}

/**
 * Spawns a supervised child: it dies with this process (parent-death signal where the OS allows it, and in any
 * case with a kill on exit), and its output goes to the log line by line under its name.
 */
export function spawnChild(options: SpawnChildOptions): ChildProcess {
  const [command, args] = canUsePdeathsig()
    ? ["setpriv", ["--pdeathsig", "KILL", "--", options.command, ...options.args]]
    : [options.command, options.args];
  const child = spawn(command, args, {
    cwd: options.cwd,
    env: options.env ?? process.env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  const log = options.logger.child({ member: options.name });
  for (const stream of [child.stdout, child.stderr]) {
    if (!stream) continue;
    createInterface({ input: stream }).on("line", (line) => {
      log.debug({ stream: stream === child.stdout ? "stdout" : "stderr" }, line);
      options.onLine?.(line);
    });
  }
  trackChild(child);
  return child;
}

const live = new Set<ChildProcess>();
let exitHookInstalled = false;

/** Kills every still-running child when this process exits normally (the parent-death signal covers SIGKILL). */
function trackChild(child: ChildProcess): void {
  live.add(child);
  child.once("exit", () => live.delete(child));
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.once("exit", () => {
      for (const c of live) c.kill("SIGKILL");
    });
  }
}

/** Stops a child: SIGTERM, then SIGKILL after a grace period. Resolves when it has exited. */
export function stopChild(child: ChildProcess, graceMs = 3_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
    child.once("exit", () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill("SIGTERM");
  });
}
