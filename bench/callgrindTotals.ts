import { execFileSync } from "node:child_process";

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
