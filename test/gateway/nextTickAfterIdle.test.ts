import { spawn } from "node:child_process";
import type { ChildProcess } from "node:child_process";
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AnvilNode } from "../../src/devnet/anvil.js";
import { parseLogLines } from "../support/jsonLogLines.js";
import { cliArgs, ROOT } from "../support/runCli.js";
import { waitFor } from "../support/waitFor.js";
import { startUpstreamNode, writeGatewayConfig } from "./support.js";

const PROBE = join(ROOT, "test/support/nextTickFeedbackProbe.mjs");
const NODE_FLAGS = ["--allow-natives-syntax", "--expose-gc", "--import", PROBE];

/**
 * The IC states of the feedback slots where nextTick's tick-object literal defines its fields, from the probe's
 * %DebugPrint of process.nextTick (one line per slot: "- slot #50 DefineKeyedOwnPropertyInLiteral MONOMORPHIC {").
 */
function literalSlotStates(printed: string): string[] {
  return [...printed.matchAll(/slot #\d+ DefineKeyedOwnPropertyInLiteral (\w+)/g)].map((m) => m[1]!);
}

/** Runs `node FLAGS ARGS` with its stdout in a file (the probe's print needs one) until it exits or is stopped. */
function startWithFileStdout(dir: string, name: string, args: string[], env: NodeJS.ProcessEnv = {}) {
  const file = join(dir, `${name}.out`);
  const fd = openSync(file, "w");
  const child = spawn(process.execPath, [...NODE_FLAGS, ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ["ignore", fd, "inherit"],
  });
  closeSync(fd);
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  return { child, exited, output: () => readFileSync(file, "utf8") };
}

describe("process.nextTick in a gateway process after it idles", () => {
  let node: AnvilNode;
  let dir: string;
  const children: ChildProcess[] = [];

  beforeAll(async () => {
    node = await startUpstreamNode();
    dir = mkdtempSync(join(tmpdir(), "lightfleet-next-tick-"));
  });

  afterAll(async () => {
    for (const child of children)
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    await node?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("keeps nextTick's field definitions monomorphic through the full collections of an idle process", async () => {
    // The probe itself, in a plain node process: the collections do turn nextTick's literal megamorphic there, so the
    // gateway's result below says something about the gateway.
    const plain = startWithFileStdout(dir, "plain", ["-e", "setTimeout(() => {}, 30_000)"], {
      NEXT_TICK_PROBE_NOW: "1",
    });
    children.push(plain.child);
    await waitFor(() => plain.output().includes("next-tick-probe done"), {
      what: "the plain process's probe",
    });
    plain.child.kill("SIGKILL");
    await plain.exited;
    expect(literalSlotStates(plain.output())).toEqual([
      "MONOMORPHIC",
      "MEGAMORPHIC",
      "MEGAMORPHIC",
      "MEGAMORPHIC",
    ]);

    const config = writeGatewayConfig(join(dir, "gateway.yaml"), {
      peer: node.httpUrl,
      network: { upstreams: [{ name: "upstream", http: node.httpUrl }] },
    });
    const gateway = startWithFileStdout(
      dir,
      "gateway",
      cliArgs(["gateway", "--config", config, "--port", "0", "--admin-port", "0"]),
    );
    children.push(gateway.child);
    const serving = await waitFor(
      () =>
        parseLogLines<{ msg?: string; admin: string }>(gateway.output()).find((line) =>
          line.msg?.includes("gateway serving"),
        ),
      { what: "the gateway's serving line", timeoutMs: 30_000 },
    );
    await waitFor(async () => (await fetch(`${serving.admin}/readyz`)).status === 200, { what: "ready" });
    gateway.child.kill("SIGUSR2");
    await waitFor(() => gateway.output().includes("next-tick-probe done"), { what: "the gateway's probe" });
    expect(literalSlotStates(gateway.output())).toEqual([
      "MONOMORPHIC",
      "MONOMORPHIC",
      "MONOMORPHIC",
      "MONOMORPHIC",
    ]);
    gateway.child.kill("SIGTERM");
    await gateway.exited;
  });
});
