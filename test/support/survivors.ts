import { readFileSync, readdirSync, readlinkSync } from "node:fs";
import { sep } from "node:path";
import { commandLine } from "./processTree.js";

/** Environment variable the suite's global setup gives its run; every process a test starts inherits it. */
export const RUN_MARKER = "LIGHTFLEET_TEST_RUN";

/** What identifies one test run's processes. */
export interface TestRun {
  /** Value of RUN_MARKER in this run. */
  id: string;
  /** Pid of the vitest process the run hangs from. */
  root: number;
  /** The work tree the run tests. */
  cwd: string;
}

export interface Survivor {
  pid: number;
  command: string;
  /** Why it counts as the run's. */
  why: string;
}

interface ProcessInfo {
  pid: number;
  ppid: number;
  state: string;
  /** Start time in clock ticks after boot: later starts have larger values. */
  start: number;
}

/**
 * Processes of the run that are still alive, other than vitest's own: descendants of the vitest process, processes
 * carrying the run's marker (an orphan reparented away from the tree keeps its environment), and orphans started
 * during the run whose working directory is in the work tree (a child given an environment of its own loses the
 * marker). An orphan is one reparented to init (pid 1): a command someone runs in the same tree meanwhile, another
 * test run included, still has its shell as parent and is left alone.
 */
export function survivingProcesses(run: TestRun): Survivor[] {
  const all = new Map<number, ProcessInfo>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const info = processInfo(Number(entry));
    if (info) all.set(info.pid, info);
  }
  const rootInfo = all.get(run.root);
  if (!rootInfo) throw new Error(`the test run's process ${run.root} is not running`);
  const ancestors = new Set<number>();
  for (let p = all.get(rootInfo.ppid); p && !ancestors.has(p.pid); p = all.get(p.ppid)) ancestors.add(p.pid);

  const descendsFromRoot = (info: ProcessInfo): boolean => {
    const seen = new Set<number>();
    for (let p = all.get(info.ppid); p && !seen.has(p.pid); p = all.get(p.ppid)) {
      if (p.pid === run.root) return true;
      seen.add(p.pid);
    }
    return false;
  };

  const isVitestOwn = (pid: number): boolean => pid === run.root || isVitestWorker(commandLine(pid));

  const whyOurs = (info: ProcessInfo): string | undefined => {
    if (descendsFromRoot(info)) return "started under the test run";
    const marker = environment(info.pid).find((entry) => entry.startsWith(`${RUN_MARKER}=`));
    if (marker === `${RUN_MARKER}=${run.id}`) return `carries ${marker}`;
    if (marker !== undefined) return undefined; // another run's: that run reports it
    const orphan = info.ppid === 1 && info.start >= rootInfo.start;
    return orphan && inside(workingDirectory(info.pid), run.cwd)
      ? "an orphan started during the run in the work tree"
      : undefined;
  };

  const found: Survivor[] = [];
  for (const info of all.values()) {
    if (info.pid === run.root || ancestors.has(info.pid) || info.state === "Z") continue;
    const command = commandLine(info.pid);
    if (isVitestWorker(command) || (isEsbuild(command) && isVitestOwn(info.ppid))) continue;
    const why = whyOurs(info);
    if (why) found.push({ pid: info.pid, command, why });
  }
  return found;
}

/** vitest's worker processes: vitest ends them itself after the teardown. */
function isVitestWorker(command: string): boolean {
  return /node_modules\/vitest\/dist\/workers\//.test(command);
}

/** The esbuild service that Vite (in vitest) or tsx (in a worker) keeps for transforms. */
function isEsbuild(command: string): boolean {
  return /\/esbuild\/bin\/esbuild |\/@esbuild\/[^/]+\/bin\/esbuild /.test(command);
}

function processInfo(pid: number): ProcessInfo | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Fields after the command name (which may contain spaces): state, ppid, ..., starttime is the 20th of them.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return { pid, state: fields[0]!, ppid: Number(fields[1]), start: Number(fields[19]) };
  } catch {
    return undefined; // ended while we looked
  }
}

/** The process's environment as NAME=VALUE entries ([] if it is gone or not ours to read). */
function environment(pid: number): string[] {
  try {
    return readFileSync(`/proc/${pid}/environ`, "utf8").split("\0");
  } catch {
    return [];
  }
}

function workingDirectory(pid: number): string | undefined {
  try {
    return readlinkSync(`/proc/${pid}/cwd`);
  } catch {
    return undefined;
  }
}

function inside(dir: string | undefined, tree: string): boolean {
  return dir !== undefined && (dir === tree || dir.startsWith(tree + sep));
}
