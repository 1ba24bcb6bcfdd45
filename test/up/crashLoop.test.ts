import { PassThrough } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import { controllerComponent } from "../../src/up/controllerComponent.js";
import { devnetComponent } from "../../src/up/devnetComponent.js";
import { fleetComponent } from "../../src/up/fleetComponent.js";
import { startUp, type RunningUp } from "../../src/up/runUp.js";
import { runCli } from "../support/runCli.js";
import { writeUpConfig } from "../support/upConfig.js";
import { waitFor } from "../support/waitFor.js";

const cleanup: Array<() => unknown> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

const NODE = "alpha-light-1";

/**
 * `up` with a restart budget of one: the first kill is restarted, the second leaves the node in CrashLoop (dead, no
 * more automatic restarts).
 */
async function upWithNodeInCrashLoop(): Promise<RunningUp> {
  const config = writeUpConfig({
    health: { restartAfter: "400ms", restartBackoffBase: "400ms", crashLoopAfter: 1, stallAfter: "1m" },
  });
  const up = await startUp({
    config,
    components: [devnetComponent, fleetComponent, controllerComponent],
    stdout: new PassThrough() as unknown as NodeJS.WriteStream,
  });
  cleanup.push(() => up.stop());
  const stateOf = () => up.context.controller!.lastOutput("alpha")?.nodes.find((n) => n.name === NODE)?.state;
  await waitFor(() => stateOf() === "Healthy", { what: `${NODE} Healthy`, timeoutMs: 30_000 });
  for (const expected of ["Healthy", "CrashLoop"]) {
    expect((await fault(up, { kind: "kill" })).status).toBe(200);
    await waitFor(() => stateOf() !== "Healthy", { what: `${NODE} out of Healthy`, timeoutMs: 10_000 });
    await waitFor(() => stateOf() === expected, { what: `${NODE} ${expected}`, timeoutMs: 30_000 });
  }
  return up;
}

function backInRouting(up: RunningUp): Promise<unknown> {
  return waitFor(
    () =>
      up.context
        .controller!.lastOutput("alpha")
        ?.nodes.some((n) => n.name === NODE && n.state === "Healthy" && n.routed),
    { what: `${NODE} Healthy and routed again`, timeoutMs: 30_000 },
  );
}

function lastRestart(up: RunningUp) {
  return up.context
    .fleet!.members("alpha")
    .find((m) => m.name === NODE)!
    .restarts.at(-1);
}

function fault(up: RunningUp, body: object): Promise<Response> {
  return fetch(`${up.context.admin.url}/devnet/faults/${NODE}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

describe("a node in CrashLoop in lightfleet up", () => {
  it("comes back with devnet heal: restarted, Healthy and routed again", async () => {
    const up = await upWithNodeInCrashLoop();
    const restartsBefore = up.context.fleet!.members("alpha").find((m) => m.name === NODE)!.restarts.length;
    const healed = await fault(up, { kind: "heal" });
    expect(healed.status, await healed.clone().text()).toBe(200);
    await backInRouting(up);
    const member = up.context.fleet!.members("alpha").find((m) => m.name === NODE)!;
    expect(member.restarts.length).toBe(restartsBefore + 1);
    expect(member.restarts.at(-1)?.reason).toBe("manual");
  });

  it("comes back with devnet heal when the devnet no longer drives it", async () => {
    const up = await upWithNodeInCrashLoop();
    // As after a restart whose new process could not be attached: the devnet has no node of that name.
    up.context.devnet!.detach(NODE);
    const healed = await fault(up, { kind: "heal" });
    expect(healed.status, await healed.clone().text()).toBe(200);
    await backInRouting(up);
    expect(lastRestart(up)?.reason).toBe("manual");
  });

  it("comes back with lightfleet node restart, and an unknown node is named as such", async () => {
    const up = await upWithNodeInCrashLoop();
    const admin = up.context.admin.url;
    const restarted = await runCli(["node", "restart", NODE, "--admin", admin]);
    expect(restarted.stderr).toBe("");
    expect(restarted.stdout).toContain(`${NODE}: restart requested (alpha`);
    expect(restarted.code).toBe(0);
    await backInRouting(up);
    expect(lastRestart(up)?.reason).toBe("manual");
    const unknown = await runCli(["node", "restart", "alpha-light-9", "--admin", admin]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain(
      "no light node named alpha-light-9 (nodes: alpha-light-0, alpha-light-1)",
    );
  });
});
