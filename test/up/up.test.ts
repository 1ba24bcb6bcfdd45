import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createServer } from "node:net";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { freePort } from "../../src/process/freePort.js";
import { expectProcessesGone } from "../support/devnet.js";
import { anvilsUnder } from "../support/processTree.js";
import { ROOT, runCli } from "../support/runCli.js";
import { writeUpConfig } from "../support/upConfig.js";
import { spawnUp, type UpProcess } from "../support/upProcess.js";
import { waitFor } from "../support/waitFor.js";

const cleanup: Array<() => unknown> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

/** `lightfleet up` as its own process, killed with everything under it if a test fails halfway. */
function startUp(config: string, extraArgs: string[] = []): UpProcess {
  const up = spawnUp(config, extraArgs);
  cleanup.push(up.kill);
  return up;
}

describe("lightfleet up", () => {
  it("reaches a healthy fleet, serves the admin endpoints and the devnet routes, and stops cleanly on SIGTERM", async () => {
    const { child, lines } = startUp(writeUpConfig());
    const started = await waitFor(() => lines().find((l) => l.msg === "lightfleet up: started"), {
      what: "up started",
      timeoutMs: 30_000,
    });
    const admin = started.admin as string;
    await waitFor(
      async () =>
        /lightfleet_pool_healthy_nodes\{network="alpha"\} 2/.test(
          await (await fetch(`${admin}/metrics`)).text(),
        ),
      { what: "two healthy light nodes", timeoutMs: 20_000 },
    );
    expect((await fetch(`${admin}/readyz`)).status).toBe(200);
    const devnet = (await (await fetch(`${admin}/devnet/status`)).json()) as {
      nodes: Array<{ name: string }>;
    };
    expect(devnet.nodes.map((n) => n.name).sort()).toEqual([
      "alpha-full-0",
      "alpha-full-1",
      "alpha-light-0",
      "alpha-light-1",
    ]);
    const routed = lines()
      .filter((l) => l.msg === "node routed")
      .map((l) => l.node);
    expect(routed.sort()).toEqual(["alpha-light-0", "alpha-light-1"]);

    const anvils = anvilsUnder(child.pid!);
    expect(anvils).toHaveLength(4);
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
    child.kill("SIGTERM");
    expect(await exited).toBe(0);
    await expectProcessesGone(anvils);
    expect(lines().at(-1)?.msg).toBe("stopped");
  });

  it("is ready only once every component serves, and lists them all", async () => {
    const adminPort = await freePort();
    const { child } = startUp(writeUpConfig(), ["--admin-port", String(adminPort)]);
    let exited = false;
    child.once("exit", () => (exited = true));
    // Polled from before the admin port opens: the first 200 must already list every component as serving.
    const ready = await waitFor(
      async () => {
        if (exited) throw new Error("up exited");
        const res = await fetch(`http://127.0.0.1:${adminPort}/readyz`).catch(() => undefined);
        return res?.status === 200 ? await res.text() : undefined;
      },
      { what: "a 200 from /readyz", timeoutMs: 40_000, intervalMs: 50 },
    );
    for (const component of ["devnet", "process fleet", "controller", "gateway", "autoscaler", "key API"])
      expect(ready).toContain(`[+]${component} ok`);
    // By then the controller has found a node Healthy and routed it, and the gateway serves a head.
    const metrics = await (await fetch(`http://127.0.0.1:${adminPort}/metrics`)).text();
    expect(metrics).toMatch(/lightfleet_pool_healthy_nodes\{network="alpha"\} [1-9]/);
    expect(metrics).toMatch(/lightfleet_gateway_served_head_block\{network="alpha"\} \d/);
  });

  it("names the devnet port that is taken", async () => {
    const busy = createServer().listen(0, "127.0.0.1");
    await new Promise((resolve) => busy.once("listening", resolve));
    cleanup.push(() => new Promise((resolve) => busy.close(resolve)));
    const port = (busy.address() as AddressInfo).port;
    const result = await runCli(["up", "--config", writeUpConfig({ devnetBasePort: port })], {
      timeoutMs: 40_000,
    });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`port ${port} is in use`);
    expect(result.stderr).toContain("alpha-full-0");
    expect(result.stderr).not.toMatch(/\n\s+at /);
  });

  it("exits 2 with the problems listed on a bad config", async () => {
    const dir = mkdtempSync(join(tmpdir(), "lightfleet-up-bad-"));
    cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, "bad.yaml");
    writeFileSync(
      file,
      "networks:\n  - name: alpha\n    chainId: 31337\n    nodes: { command: ['{anvil}', '{prot}'] }\n",
    );
    const result = await runCli(["up", "--config", file]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("networks[0].nodes.command[1]: unknown placeholder {prot}");
    expect(result.stderr).toContain("networks[0].reservedPeers: is required");
    expect(result.stderr).not.toMatch(/\n\s+at /);
  });

  it("ships an example devnet config that validates without listing reserved peers", async () => {
    const result = await runCli(["config", "check", join(ROOT, "examples/devnet.yaml")]);
    expect(result.stderr).toBe("");
    expect(result.stdout).toContain("ok (networks: mainnet (chain 1), sepolia (chain 11155111))");
    expect(result.code).toBe(0);
  });

  it("exits 2 on a bad flag", async () => {
    const result = await runCli(["up", "--admin-port", "99999"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("must be a port number");
  });
});
