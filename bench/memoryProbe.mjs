// Loaded (`--import`) into a benchmarked node server started with --expose-gc: on SIGUSR2 it collects all garbage
// and writes the process's memory to $LIGHTFLEET_BENCH_MEMORY_DIR/<pid>.json, so the bench reads memory with no
// garbage in it (bench/processUsage.ts, settledMemory). Inert without that variable.
import { renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";

const dir = process.env.LIGHTFLEET_BENCH_MEMORY_DIR;
const gc = globalThis.gc;
if (dir && typeof gc === "function")
  process.on("SIGUSR2", () => {
    // Several full collections: objects freed by one (weak references, finalizers) go in the next.
    for (let i = 0; i < 4; i++) gc();
    const usage = process.memoryUsage();
    const file = join(dir, `${process.pid}.json`);
    writeFileSync(`${file}.tmp`, JSON.stringify(usage));
    renameSync(`${file}.tmp`, file);
  });
