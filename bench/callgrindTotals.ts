import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";

/** Instructions in one callgrind dump: all threads, and the main thread alone. */
export interface CallgrindTotals {
  all: number;
  /**
   * The main thread's (JavaScript, node:http, libuv): all less what ran under `start_thread`, V8's background threads
   * (compiling, concurrent garbage collection), whose share moves from run to run with when the compiler kicks in.
   */
  main: number;
}

const count = (line: string | undefined) => Number((line ?? "").trim().split(/\s+/)[0]!.replaceAll(",", ""));

/** Reads a dump's totals with callgrind_annotate (its inclusive costs give the background threads' share). */
export function callgrindTotals(file: string): CallgrindTotals {
  const text = execFileSync("callgrind_annotate", ["--inclusive=yes", file], {
    encoding: "utf8",
    maxBuffer: 64 * 1024 * 1024,
  });
  const lines = text.split("\n");
  const all = count(lines.find((l) => l.includes("PROGRAM TOTALS")));
  const threads = lines.find((l) => l.includes(":start_thread "));
  return { all, main: all - (threads === undefined ? 0 : count(threads)) };
}

/**
 * Calls into functions whose name contains `name` in one dump (callgrind's `cfn=` and `calls=` lines, names
 * compressed to ids after their first use). Used for node's nextTick slow path: each of its tick object's fields
 * defined through `Runtime_DefineKeyedOwnPropertyInLiteral`, about 18 per request when it is on, none when it is off.
 */
export function callsInto(file: string, name: string): number {
  const names = new Map<string, string>();
  let calls = 0;
  let counting = false;
  for (const line of readFileSync(file, "utf8").split("\n")) {
    const named = /^c?fn=\((\d+)\)(?: (.*))?$/.exec(line);
    if (named) {
      if (named[2] !== undefined) names.set(named[1]!, named[2]);
      counting = line.startsWith("cfn=") && (names.get(named[1]!) ?? "").includes(name);
      continue;
    }
    if (counting && line.startsWith("calls=")) {
      calls += Number(line.slice("calls=".length).split(" ")[0]);
      counting = false;
    }
  }
  return calls;
}

/** The functions a major collection runs in: V8's incremental marking steps and its mark-compact pause. */
const MAJOR_GC = ["v8::internal::IncrementalMarking::Step(double", "v8::internal::Heap::MarkCompact()"];

/**
 * Instructions a dump spent in major garbage collection, inclusive: every cost line of those functions (their own
 * and, after each `calls=` line, what the call cost), read from the dump itself. About 120 million when a major
 * collection falls in a count, which it does by chance.
 */
export function majorGcInstructions(file: string): number {
  const names = new Map<string, string>();
  let inMajor = false;
  let total = 0;
  for (const line of readFileSync(file, "utf8").split("\n")) {
    const named = /^fn=\((\d+)\)(?: (.*))?$/.exec(line);
    if (named) {
      if (named[2] !== undefined) names.set(named[1]!, named[2]);
      const name = names.get(named[1]!) ?? "";
      inMajor = MAJOR_GC.some((m) => name.includes(m));
      continue;
    }
    const cfn = /^cfn=\((\d+)\) (.*)$/.exec(line);
    if (cfn) names.set(cfn[1]!, cfn[2]!);
    // A cost line is a position and the event's count, no `key=`.
    if (inMajor && /^[\d+\-*]/.test(line) && !line.includes("="))
      total += Number(line.trim().split(/\s+/).at(-1));
  }
  return total;
}
