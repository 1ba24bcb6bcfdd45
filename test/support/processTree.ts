import { readFileSync, readdirSync } from "node:fs";

/** Every process descending from `pid` (children, grandchildren, ...), read from /proc. */
export function descendants(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const ppid = Number(statFields(readFileSync(`/proc/${entry}/stat`, "utf8"))[1]);
      const list = children.get(ppid) ?? [];
      list.push(Number(entry));
      children.set(ppid, list);
    } catch {
      // The process ended while we looked.
    }
  }
  const found: number[] = [];
  const queue = [pid];
  while (queue.length > 0) {
    for (const child of children.get(queue.shift()!) ?? []) {
      found.push(child);
      queue.push(child);
    }
  }
  return found;
}

/** Running anvil processes started, directly or not, by `pid` (a wrapper shell's children included). */
export function anvilsUnder(pid: number): number[] {
  return descendants(pid).filter((p) => /(^|\/)anvil$/.test(commandLine(p).split(" ")[0] ?? ""));
}

/** The process group of a process. */
export function processGroup(pid: number): number {
  return Number(statFields(readFileSync(`/proc/${pid}/stat`, "utf8"))[2]);
}

/** The command line of a process ("" once it is gone). */
export function commandLine(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ").trim();
  } catch {
    return "";
  }
}

/** Fields after the command name in /proc/PID/stat: state, ppid, ... (the name may contain spaces). */
function statFields(stat: string): string[] {
  return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
}
