import { spawn } from "node:child_process";
import { afterEach, describe, expect, inject, it } from "vitest";
import { ROOT } from "./runCli.js";
import { RUN_MARKER, survivingProcesses } from "./survivors.js";
import { waitFor } from "./waitFor.js";

/** An idle node process that outlives its parent: spawned detached by a short-lived node that exits at once. */
async function startOrphan(env: NodeJS.ProcessEnv): Promise<number> {
  const script =
    "const c = require('node:child_process').spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)']," +
    " { detached: true, stdio: 'ignore' }); console.log(c.pid); c.unref();";
  const parent = spawn(process.execPath, ["-e", script], {
    cwd: ROOT,
    env,
    stdio: ["ignore", "pipe", "inherit"],
  });
  let out = "";
  parent.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => parent.once("close", resolve));
  expect(code).toBe(0);
  const pid = Number(out.trim());
  expect(pid).toBeGreaterThan(0);
  return pid;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe("the suite's check for processes that outlive the tests", () => {
  const run = inject("testRun");
  const started: number[] = [];

  afterEach(async () => {
    for (const pid of started.splice(0)) {
      if (alive(pid)) process.kill(pid, "SIGKILL");
      await waitFor(() => survivingProcesses(run).every((s) => s.pid !== pid), {
        what: `pid ${pid} to be gone`,
      });
    }
  });

  it("runs with the run's marker in every test process's environment", () => {
    expect(process.env[RUN_MARKER]).toBe(run.id);
  });

  it("names an orphan that carries the run's marker, and no longer once it is killed", async () => {
    const pid = await startOrphan(process.env);
    started.push(pid);
    // The orphan left the vitest process tree when its parent exited.
    expect(survivingProcesses(run)).toContainEqual({
      pid,
      command: `${process.execPath} -e setInterval(() => {}, 1000)`,
      why: `carries ${RUN_MARKER}=${run.id}`,
    });
    process.kill(pid, "SIGKILL");
    await waitFor(() => survivingProcesses(run).every((s) => s.pid !== pid), {
      what: "the killed orphan to go",
    });
  });

  it("names an orphan started in the work tree with an environment of its own (no marker)", async () => {
    const pid = await startOrphan({ PATH: process.env.PATH });
    started.push(pid);
    expect(survivingProcesses(run)).toContainEqual(
      expect.objectContaining({ pid, why: "an orphan started during the run in the work tree" }),
    );
  });

  it("leaves alone an orphan of another test run (it carries that run's marker)", async () => {
    const pid = await startOrphan({ ...process.env, [RUN_MARKER]: "another-run" });
    started.push(pid);
    expect(alive(pid)).toBe(true);
    expect(survivingProcesses(run).map((s) => s.pid)).not.toContain(pid);
  });

  it("names a child still running under the test run", async () => {
    const child = spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], {
      env: {},
      stdio: "ignore",
    });
    const exited = new Promise((resolve) => child.once("exit", resolve));
    try {
      expect(survivingProcesses(run)).toContainEqual(
        expect.objectContaining({ pid: child.pid, why: "started under the test run" }),
      );
    } finally {
      child.kill("SIGKILL");
      await exited;
    }
    expect(survivingProcesses(run).map((s) => s.pid)).not.toContain(child.pid);
  });
});
