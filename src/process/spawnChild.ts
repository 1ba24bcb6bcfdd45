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
  /**
   * Runs the child in a process group of its own, so that stopping it also stops whatever it started (a wrapper
   * script's node, say), and a Ctrl-C on the terminal reaches only the supervisor, which then stops it in order.
   */
  processGroup?: boolean;
  /** Opens a Node IPC channel to the child (`child.send`, its `process.on("message")`), for a node child. */
  ipc?: boolean;
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
    stdio: options.ipc ? ["ignore", "pipe", "pipe", "ipc"] : ["ignore", "pipe", "pipe"],
    ...(options.ipc ? { serialization: "advanced" as const } : {}),
    detached: options.processGroup === true,
  });
  if (options.processGroup) {
    groupLeaders.add(child);
    if (child.pid !== undefined) guardGroup(child, child.pid);
  }
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
const groupLeaders = new WeakSet<ChildProcess>();
let exitHookInstalled = false;

/** Kills every still-running child when this process exits normally (the parent-death signal covers SIGKILL). */
function trackChild(child: ChildProcess): void {
  live.add(child);
  child.once("exit", () => live.delete(child));
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.once("exit", () => {
      for (const c of live) signalChild(c, "SIGKILL");
    });
  }
}

/**
 * The parent-death signal reaches only the direct child, not what it started. A small guard process per group holds
 * a pipe from this process: when this process dies (even by SIGKILL) or the child exits, the pipe closes and the guard
 * kills whatever is left in the group.
 */
function guardGroup(child: ChildProcess, pgid: number): void {
  const guard = spawn("sh", ["-c", 'read _ ; kill -KILL "-$0" 2>/dev/null', String(pgid)], {
    stdio: ["pipe", "ignore", "ignore"],
    detached: true,
  });
  guard.on("error", () => undefined);
  guard.stdin?.on("error", () => undefined);
  // The guard must not keep this process alive.
  guard.unref();
  (guard.stdin as unknown as { unref?: () => void } | null)?.unref?.();
  child.once("exit", () => guard.stdin?.end());
}

/** Sends a signal to a child, and to its whole process group when it leads one. */
export function signalChild(child: ChildProcess, signal: NodeJS.Signals): void {
  if (groupLeaders.has(child) && child.pid !== undefined) {
    try {
      process.kill(-child.pid, signal);
      return;
    } catch {
      // The group is gone already; fall back to the child itself.
    }
  }
  child.kill(signal);
}

/** Stops a child (and its process group): SIGTERM, then SIGKILL after a grace period. Resolves when it has exited. */
export function stopChild(child: ChildProcess, graceMs = 3_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => signalChild(child, "SIGKILL"), graceMs);
    child.once("exit", () => {
      clearTimeout(timer);
      // Whatever the child left behind in its group goes with it.
      if (groupLeaders.has(child)) signalChild(child, "SIGKILL");
      resolve();
    });
    signalChild(child, "SIGTERM");
  });
}
