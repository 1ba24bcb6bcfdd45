import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { startFakeApiServer } from "../support/fakeApiServer.js";
import { cliArgs, ROOT } from "../support/runCli.js";
import { waitFor } from "../support/waitFor.js";

const LEASES = "apis/coordination.k8s.io/v1/leases";

const cleanup: Array<() => unknown> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

describe("lightfleet controller", () => {
  it("runs from the kubeconfig, takes the Lease, serves its admin endpoints, and gives the Lease back on SIGTERM", async () => {
    const api = await startFakeApiServer();
    cleanup.push(() => api.close());
    const dir = mkdtempSync(join(tmpdir(), "lightfleet-controller-"));
    cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
    const kubeconfig = api.writeKubeconfig(join(dir, "kubeconfig"));
    const config = join(dir, "controller.yaml");
    writeFileSync(
      config,
      ["log: { format: json }", "admin: { host: 127.0.0.1 }", "controller: { namespace: eth }"].join("\n"),
    );
    const child = spawn(process.execPath, cliArgs(["controller", "--config", config, "--admin-port", "0"]), {
      cwd: ROOT,
      env: { ...process.env, KUBECONFIG: kubeconfig, POD_NAME: "controller-0", POD_NAMESPACE: "eth" },
    });
    cleanup.push(() => child.kill("SIGKILL"));
    let stdout = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    const admin = await waitFor(
      () =>
        stdout
          .split("\n")
          .filter((line) => line.includes("controller running"))
          .map((line) => (JSON.parse(line) as { admin: string }).admin)[0],
      { what: "the controller's running line", timeoutMs: 30_000 },
    );

    const holder = () =>
      (api.get(LEASES, "eth", "lightfleet-controller")?.spec as { holderIdentity?: string } | undefined)
        ?.holderIdentity;
    await waitFor(() => holder() === "controller-0", { what: "the Lease taken" });
    await waitFor(async () => (await fetch(`${admin}/readyz`)).status === 200, { what: "ready" });
    expect((await fetch(`${admin}/healthz`)).status).toBe(200);
    const metrics = await (await fetch(`${admin}/metrics`)).text();
    expect(metrics).toMatch(/^lightfleet_controller_leader 1$/m);
    expect(metrics).toMatch(/lightfleet_kube_cache_age_seconds\{resource="lightnodepools",scope="eth"\}/);
    // The pools are followed, in the configured namespace.
    expect(
      api.calls.some(
        (c) =>
          c.path === "/apis/lightfleet.io/v1alpha1/namespaces/eth/lightnodepools" && c.query.watch === "true",
      ),
    ).toBe(true);

    const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
    child.kill("SIGTERM");
    expect(await exited).toBe(0);
    expect(holder()).toBe("");
  });
});
