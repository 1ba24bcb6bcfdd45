import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { commandLine } from "./processTree.js";
import { runCli, spawnGateway } from "./runCli.js";
import { waitFor } from "./waitFor.js";

/** Pids of every running process whose command line mentions TEXT. */
function processesMentioning(text: string): number[] {
  return readdirSync("/proc")
    .filter((entry) => /^\d+$/.test(entry) && commandLine(Number(entry)).includes(text))
    .map(Number);
}

/** A gateway config (in a directory of its own, so its path names this test's processes) with WORKERS workers. */
function gatewayConfig(dir: string, workers: number): string {
  const file = join(dir, `gateway-${workers}.yaml`);
  // Nothing listens on the discard port: the gateway serves (not ready) without an upstream.
  const nowhere = "http://127.0.0.1:9";
  writeFileSync(
    file,
    [
      "log: { format: json }",
      "admin: { host: 127.0.0.1 }",
      `gateway: { host: 127.0.0.1, workers: ${workers} }`,
      "networks:",
      "  - name: devnet",
      "    chainId: 31337",
      `    reservedPeers: [{ name: peer, http: "${nowhere}" }]`,
      `    gateway: { default: true, upstreams: [{ name: upstream, http: "${nowhere}" }] }`,
    ].join("\n"),
  );
  return file;
}

describe("lightfleet child processes of the tests", () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "lightfleet-runcli-"));
  });
  afterAll(() => {
    for (const pid of processesMentioning(dir)) process.kill(pid, "SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  });

  it("a spawned gateway is the child itself, so killing the child leaves none of its processes", async () => {
    const config = gatewayConfig(dir, 2);
    const gateway = await spawnGateway(config);
    const serving = JSON.parse(
      gateway
        .stdout()
        .split("\n")
        .find((l) => l.includes("gateway serving"))!,
    ) as {
      pid: number;
    };
    expect(serving.pid).toBe(gateway.child.pid);
    // The primary and its two workers.
    await waitFor(() => processesMentioning(config).length === 3, { what: "the gateway's workers" });

    const exited = new Promise((resolve) => gateway.child.once("exit", resolve));
    gateway.child.kill("SIGKILL");
    await exited;
    await waitFor(() => processesMentioning(config).length === 0, {
      what: "every process of the killed gateway to end",
      timeoutMs: 10_000,
    });
  });

  it("a command that runs past its time is killed, not only a wrapper around it", async () => {
    const config = gatewayConfig(dir, 1);
    const result = runCli(["gateway", "--config", config, "--port", "0", "--admin-port", "0"], {
      timeoutMs: 10_000,
    });
    const outcome = result.then(
      () => "finished",
      (error: Error) => error.message,
    );
    await waitFor(() => processesMentioning(config).length > 0, { what: "the gateway to start" });
    expect(await outcome).toMatch(/did not finish within 10000 ms/);
    await waitFor(() => processesMentioning(config).length === 0, {
      what: "the timed-out gateway to end",
      timeoutMs: 10_000,
    });
  });
});
