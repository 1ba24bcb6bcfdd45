import { readdirSync, readFileSync } from "node:fs";

/** Clock ticks per second of /proc's CPU times (USER_HZ: 100 on every Linux the project runs on). */
const TICKS_PER_SECOND = 100;

/** The process and its descendants (gateway workers), from /proc/<pid>/task/<tid>/children. */
function processTree(pid: number): number[] {
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

function ownCpuSeconds(pid: number): number {
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
