import { execFileSync } from "node:child_process";
import { cpus } from "node:os";
import { cpuSeconds, processTree } from "./processUsage.js";

/**
 * One core each, on a machine of two or more: the server measured on the last core, everything else (the bench with
 * its load generator, the node it forwards to) on the others. Rates then compare servers as a machine with a core per
 * process would, which a shared pair of cores does not: there the load generator and the node take the same cores as
 * the server, and a server's own cost shows in its rate only in part.
 */
export const SERVER_CPU = cpus().length - 1;
const LOAD_CPUS = SERVER_CPU > 1 ? `0-${SERVER_CPU - 1}` : "0";
/** How many cores the load side has. */
export const LOAD_CPU_COUNT = SERVER_CPU;

/**
 * Starts a one-core run: this process (the bench, its load generator's threads) and what it starts from now on on the
 * load cores, until each server is moved to its own (pinServer). Throws where the machine cannot pin: fewer than two
 * cores, or no taskset (util-linux).
 */
export function startOneCore(): void {
  if (cpus().length < 2) throw new Error("one-core cannot run here: one core, nothing to pin apart");
  try {
    execFileSync("taskset", ["-p", String(process.pid)], { stdio: "ignore" });
  } catch {
    throw new Error("one-core cannot run here: taskset is missing (apt-get install util-linux)");
  }
  pin(process.pid, LOAD_CPUS);
  console.log(
    `one core each: every server on CPU ${SERVER_CPU}, the load generator and the node on the others`,
  );
}

/** A server, every thread of it and of its child processes (workers, nginx's worker), on the server core. */
export function pinServer(pid: number): void {
  for (const p of processTree(pid)) pin(p, String(SERVER_CPU));
}

function pin(pid: number, cpuList: string): void {
  // -a: every thread the process has; threads it starts later inherit the mask of the thread starting them.
  execFileSync("taskset", ["-a", "-p", "-c", cpuList, String(pid)], { stdio: "ignore" });
}

/**
 * CPU seconds the load side has used so far: this process (its load generator's thread included) and the node.
 * Over a run, against the run's time on the load cores, it says which side bounded the rate.
 */
export function loadSideCpuSeconds(nodePid: number | undefined): number {
  const own = process.cpuUsage();
  return (own.user + own.system) / 1e6 + (nodePid === undefined ? 0 : cpuSeconds(nodePid));
}

/** How busy the load side kept its cores over `seconds`, 0-1, from two readings of loadSideCpuSeconds. */
export const loadBusy = (usedSeconds: number, seconds: number) => usedSeconds / seconds / LOAD_CPU_COUNT;
