import { randomUUID } from "node:crypto";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { TestProject } from "vitest/node";
import { waitFor } from "./waitFor.js";
import { RUN_MARKER, survivingProcesses, type TestRun } from "./survivors.js";

declare module "vitest" {
  export interface ProvidedContext {
    testRun: TestRun;
  }
}

/**
 * Gives the run a marker every process it starts inherits, and at the end fails the run if any process a test
 * started is still alive (naming each, then killing it so it does not outlive the run either).
 */
export default function setup(project: TestProject): () => Promise<void> {
  const run: TestRun = { id: randomUUID(), root: process.pid, cwd: project.config.root };
  process.env[RUN_MARKER] = run.id;
  // Beside vitest's JSON report, for CI's summary line (see .ci/run).
  const report = join(project.config.root, "test-artifacts/survivors.txt");
  rmSync(report, { force: true });
  project.provide("testRun", run);

  return async () => {
    // A process a test stopped a moment ago may still be on its way out: give it a few seconds, not more.
    const left = await waitFor(() => survivingProcesses(run).length === 0, { timeoutMs: 5_000 })
      .then(() => [])
      .catch(() => survivingProcesses(run));
    if (left.length === 0) return;
    for (const { pid } of left) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // gone by now
      }
    }
    const text =
      `${left.length} process(es) started by the tests outlived them (now killed):\n` +
      left.map((s) => `  pid ${s.pid} (${s.why}): ${s.command}`).join("\n");
    mkdirSync(join(project.config.root, "test-artifacts"), { recursive: true });
    writeFileSync(report, `${text}\n`);
    process.exitCode = 1;
    throw new Error(text);
  };
}
