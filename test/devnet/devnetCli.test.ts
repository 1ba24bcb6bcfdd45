import { spawn } from "node:child_process";
import type { ChildProcess } from "node:child_process";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { DevnetStatus } from "../../src/devnet/devnet.js";
import { expectProcessesGone, processAlive } from "../support/devnet.js";
import { ROOT, runCli } from "../support/runCli.js";
import { waitFor } from "../support/waitFor.js";

const running: ChildProcess[] = [];
afterEach(() => {
  for (const child of running.splice(0)) if (child.exitCode === null) child.kill("SIGKILL");
});

interface CliDevnet {
  child: ChildProcess;
  adminUrl: string;
  output: () => string;
}

/** Runs `lightfleet devnet ARGS` as one node process (no tsx wrapper), so a signal reaches the devnet itself. */
async function startCliDevnet(args: string[]): Promise<CliDevnet> {
  const child = spawn(process.execPath, ["--import", "tsx", join(ROOT, "src/cli.ts"), "devnet", ...args], {
    cwd: ROOT,
    stdio: ["ignore", "pipe", "pipe"],
  });
  running.push(child);
  let output = "";
  child.stdout!.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const adminUrl = await waitFor(() => /^admin: (http:\/\/\S+)/m.exec(output)?.[1], {
    timeoutMs: 30_000,
    what: `the devnet banner (output so far: ${output})`,
  });
  return { child, adminUrl, output: () => output };
}

async function status(adminUrl: string): Promise<DevnetStatus> {
  return (await (await fetch(`${adminUrl}/devnet/status`)).json()) as DevnetStatus;
}

function pidsOf(s: DevnetStatus): number[] {
  return s.nodes.map((n) => n.pid).filter((pid): pid is number => pid !== undefined);
}

describe("lightfleet devnet", () => {
  it("prints its nodes and admin URL, takes fault commands, and stops every node on Ctrl-C", async () => {
    const devnet = await startCliDevnet([
      "--network",
      "alpha:1001",
      "--light-nodes",
      "1",
      "--block-time",
      "0",
      "--admin-port",
      "0",
    ]);
    expect(devnet.output()).toMatch(/alpha-full-0 +full +http:\/\/127\.0\.0\.1:\d+/);
    expect(devnet.output()).toMatch(/alpha-light-0 ws: ws:\/\/127\.0\.0\.1:\d+/);
    const pids = pidsOf(await status(devnet.adminUrl));
    expect(pids).toHaveLength(2);

    const lag = await runCli(["devnet", "lag", "alpha-light-0", "2", "--admin", devnet.adminUrl]);
    expect(lag).toMatchObject({ code: 0, stdout: "alpha-light-0: lag 2 (head 0)\n" });
    for (let i = 1; i <= 3; i++) {
      const mined = await runCli(["devnet", "mine", "--admin", devnet.adminUrl]);
      expect(mined.stdout).toMatch(new RegExp(`^alpha: head ${i} 0x[0-9a-f]{64}\n$`));
    }
    const lagging = (await status(devnet.adminUrl)).nodes.find((n) => n.name === "alpha-light-0")!;
    expect(lagging).toMatchObject({ fault: { kind: "lag", blocks: 2 }, head: { number: 1 } });

    const heal = await runCli(["devnet", "heal", "alpha-light-0", "--admin", devnet.adminUrl]);
    expect(heal).toMatchObject({ code: 0, stdout: "alpha-light-0: healed (head 3)\n" });
    const shown = await runCli(["devnet", "status", "--admin", devnet.adminUrl]);
    expect(shown.stdout).toMatch(/^alpha \(chain 1001\): head 3 0x/);

    const reorg = await runCli(["devnet", "reorg", "alpha", "2", "--admin", devnet.adminUrl]);
    expect(reorg.code).toBe(0);
    expect(reorg.stdout).toMatch(/^alpha: reorganised 2 block\(s\), head 3 0x[0-9a-f]{64}\n$/);

    const unknown = await runCli(["devnet", "stall", "nope", "--admin", devnet.adminUrl]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toBe(
      "lightfleet devnet: no devnet node named nope (nodes: alpha-full-0, alpha-light-0)\n",
    );
    const unknownNetwork = await runCli(["devnet", "mine", "beta", "--admin", devnet.adminUrl]);
    expect(unknownNetwork).toMatchObject({
      code: 2,
      stderr: "lightfleet devnet: no devnet network named beta (networks: alpha)\n",
    });
    const badBlocks = await runCli(["devnet", "lag", "alpha-light-0", "many", "--admin", devnet.adminUrl]);
    expect(badBlocks.code).toBe(2);
    expect(badBlocks.stderr).toMatch(/lag needs blocks, a whole number/);

    devnet.child.kill("SIGINT");
    await waitFor(() => devnet.child.exitCode !== null, { what: "the devnet to exit" });
    expect(devnet.child.exitCode).toBe(0);
    expect(devnet.output()).toContain("devnet stopped");
    await expectProcessesGone(pids);
  });

  it("slows a light node's state reads behind its latency front, and refuses a profile it does not know", async () => {
    const devnet = await startCliDevnet([
      "--light-nodes",
      "1",
      "--block-time",
      "0",
      "--admin-port",
      "0",
      "--latency-fronts",
    ]);
    const pids = pidsOf(await status(devnet.adminUrl));
    const slow = await runCli([
      "devnet",
      "slow",
      "devnet-light-0",
      "severe",
      "--seed",
      "3",
      "--admin",
      devnet.adminUrl,
    ]);
    expect(slow).toMatchObject({ code: 0, stdout: "devnet-light-0: slow severe seed 3 (head 0)\n" });
    const node = (await status(devnet.adminUrl)).nodes.find((n) => n.name === "devnet-light-0")!;
    expect(node.fault).toEqual({ kind: "slow", profile: "severe", seed: 3 });
    const full = await runCli(["devnet", "slow", "devnet-full-0", "--admin", devnet.adminUrl]);
    expect(full.code).toBe(2);
    expect(full.stderr).toMatch(/devnet-full-0 has no latency front/);
    const unknown = await runCli(["devnet", "slow", "devnet-light-0", "glacial", "--admin", devnet.adminUrl]);
    expect(unknown).toMatchObject({
      code: 2,
      stderr: 'lightfleet devnet: slow profile must be one of light, mild, severe (got "glacial")\n',
    });
    devnet.child.kill("SIGINT");
    await waitFor(() => devnet.child.exitCode !== null, { what: "the devnet to exit" });
    await expectProcessesGone(pids);
  });

  it("leaves no anvil behind when it is SIGKILLed", async () => {
    const devnet = await startCliDevnet(["--full-nodes", "2", "--block-time", "100ms", "--admin-port", "0"]);
    const pids = pidsOf(await status(devnet.adminUrl));
    expect(pids).toHaveLength(2);
    expect(pids.every(processAlive)).toBe(true);
    devnet.child.kill("SIGKILL");
    await expectProcessesGone(pids);
  });

  it("fails with one line when the admin endpoint cannot be reached or the options are bad", async () => {
    const unreachable = await runCli(["devnet", "kill", "devnet-full-0", "--admin", "http://127.0.0.1:1"]);
    expect(unreachable.code).toBe(1);
    expect(unreachable.stderr).toMatch(
      /^lightfleet devnet: cannot reach the devnet admin endpoint http:\/\/127\.0\.0\.1:1 .*\n$/,
    );
    // -c names the config, as for every other subcommand.
    for (const args of [
      ["devnet", "run", "-c", "/nonexistent/devnet.yaml"],
      ["devnet", "-c", "/nonexistent/devnet.yaml"],
    ]) {
      const missing = await runCli(args);
      expect(missing.stderr).not.toContain("unknown option");
      expect(missing.stderr).toContain("/nonexistent/devnet.yaml");
      expect(missing.stderr).toContain("file not found");
      expect(missing.code).toBe(2);
    }
    const badFlag = await runCli(["devnet", "--network", "Bad", "--admin-port", "0"]);
    expect(badFlag.code).toBe(2);
    expect(badFlag.stderr).toBe(
      "lightfleet devnet: --network must be NAME:CHAINID such as devnet:31337 (got Bad)\n",
    );
  });
});
