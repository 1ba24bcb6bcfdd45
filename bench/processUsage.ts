import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

/** Clock ticks per second of /proc's CPU times (USER_HZ: 100 on every Linux the project runs on). */
const TICKS_PER_SECOND = 100;

/** The process and its descendants (gateway workers), from /proc/<pid>/task/<tid>/children. */
export function processTree(pid: number): number[] {
  const pids = [pid];
  for (let i = 0; i < pids.length; i++) {
    try {
      for (const task of readdirSync(`/proc/${pids[i]}/task`))
        for (const child of readFileSync(`/proc/${pids[i]}/task/${task}/children`, "utf8").split(" "))
          if (child.trim()) pids.push(Number(child));
    } catch {
      // Gone, or /proc not readable: counted as far as it could be.
    }
  }
  return pids;
}

/**
 * CPU seconds (user and system) a process and its descendants have used so far, from /proc/<pid>/stat; NaN where /proc cannot be read.
 * Read before and after a run, the difference over the calls answered is the CPU each call cost: a measure that the
 * machine's other load slows down far less than requests per second.
 */
export function cpuSeconds(pid: number): number {
  return processTree(pid).reduce((sum, p) => sum + ownCpuSeconds(p), 0);
}

/** CPU seconds of one process alone (not its descendants); NaN where /proc cannot be read. */
export function ownCpuSeconds(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Fields after the command name (which may hold spaces), from the closing parenthesis: utime is the 12th.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
  } catch {
    return NaN;
  }
}

/** Resident memory of a process and its descendants in bytes, from /proc/<pid>/status (VmRSS); NaN if unreadable. */
export function residentBytes(pid: number): number {
  return processTree(pid).reduce((sum, p) => sum + ownResidentBytes(p), 0);
}

function ownResidentBytes(pid: number): number {
  try {
    const match = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return match ? Number(match[1]) * 1024 : NaN;
  } catch {
    return NaN;
  }
}

/** Where the servers started with MEMORY_PROBE_NODE_ARGS write their memory (bench/memoryProbe.mjs). */
const probeDir = mkdtempSync(join(tmpdir(), "bench-memory-"));
process.once("exit", () => rmSync(probeDir, { recursive: true, force: true }));

/** Node flags that let settledMemory read a server's memory after a full garbage collection. */
export const MEMORY_PROBE_NODE_ARGS = [
  "--expose-gc",
  "--import",
  pathToFileURL(join(import.meta.dirname, "memoryProbe.mjs")).href,
];
/** The environment those servers need beside the flags. */
export const MEMORY_PROBE_ENV = { LIGHTFLEET_BENCH_MEMORY_DIR: probeDir };

/** Memory of a process tree once each of its processes has collected all its garbage. */
export interface SettledMemory {
  /** Resident memory, as /proc counts it. */
  rss: number;
  /** The JavaScript heap in use and the memory outside it held by JavaScript objects (buffers). */
  heap: number;
}

/**
 * The memory of a server started with MEMORY_PROBE_NODE_ARGS and MEMORY_PROBE_ENV (and of its workers), each such
 * process read right after several full garbage collections (other processes of the tree by resident memory only): readings taken before and after something (subscribers
 * connecting) differ by what it holds, not by when the collector last ran. Rejects after 30 s without an answer.
 */
export async function settledMemory(pid: number): Promise<SettledMemory> {
  const tree = processTree(pid);
  // Only the processes started with the probe are asked (a server run by tsx has esbuild as a child, for one).
  const pids = tree.filter((p) => probed(p));
  const others = tree.filter((p) => !pids.includes(p));
  const file = (p: number) => join(probeDir, `${p}.json`);
  for (const p of pids) {
    rmSync(file(p), { force: true });
    process.kill(p, "SIGUSR2");
  }
  const deadline = Date.now() + 30_000;
  while (!pids.every((p) => existsSync(file(p)))) {
    if (Date.now() > deadline) throw new Error(`process ${pid} did not report its memory (memoryProbe.mjs)`);
    await new Promise((r) => setTimeout(r, 20));
  }
  let rss = others.reduce((sum, p) => sum + ownResidentBytes(p), 0);
  let heap = 0;
  for (const p of pids) {
    const usage = JSON.parse(readFileSync(file(p), "utf8")) as NodeJS.MemoryUsage;
    rss += usage.rss;
    heap += usage.heapUsed + usage.external;
  }
  return { rss, heap };
}

function probed(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("memoryProbe.mjs");
  } catch {
    return false;
  }
}
