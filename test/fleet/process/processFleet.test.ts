import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { ProcessFleetConfig } from "../../../src/config/sections/processFleet.js";
import { ProcessFleet, type StartedMember } from "../../../src/fleet/process/processFleet.js";
import { PassThrough } from "node:stream";
import { createLogger, silentLogger, type Logger } from "../../../src/log/logger.js";
import { HttpRpcClient } from "../../../src/rpc/httpRpcClient.js";
import { ROOT } from "../../support/runCli.js";
import { expectProcessesGone } from "../../support/devnet.js";
import { anvilsUnder } from "../../support/processTree.js";
import { waitFor } from "../../support/waitFor.js";

const ANVIL = ["{anvil}", "--port", "{port}", "--chain-id", "{chainId}", "--no-mining"];

const cleanup: Array<() => unknown> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

function fleetOf(
  nodes: Partial<ProcessFleetConfig>,
  extra: { onStarted?: (m: StartedMember) => Promise<void>; logger?: Logger } = {},
) {
  const dataDir = mkdtempSync(join(tmpdir(), "lightfleet-fleet-"));
  const fleet = new ProcessFleet({
    networks: [
      {
        name: "devnet",
        chainId: 31_337,
        nodes: { command: ANVIL, replicas: 2, basePort: 0, startTimeout: 20_000, ...nodes },
      },
    ],
    dataDir,
    ...extra,
    logger: extra.logger ?? silentLogger(),
  });
  cleanup.push(() => rmSync(dataDir, { recursive: true, force: true }));
  cleanup.push(() => fleet.stop());
  return fleet;
}

async function chainIdAt(url: string): Promise<string> {
  return new HttpRpcClient(url, 2_000).call<string>("eth_chainId");
}

function pidsOfMembers(): number[] {
  return anvilsUnder(process.pid);
}

describe("ProcessFleet", () => {
  it("starts the configured members from the command template and lists them once they answer", async () => {
    const started: StartedMember[] = [];
    const fleet = fleetOf({ replicas: 3 }, { onStarted: async (m) => void started.push(m) });
    await fleet.start();
    const members = fleet.members("devnet");
    expect(members.map((m) => m.name)).toEqual(["devnet-light-0", "devnet-light-1", "devnet-light-2"]);
    for (const member of members) {
      expect(await chainIdAt(member.httpUrl)).toBe("0x7a69");
      expect(member).toMatchObject({ network: "devnet", routed: false, restarting: false, restarts: [] });
    }
    expect(new Set(members.map((m) => m.httpUrl)).size).toBe(3);
    expect(started.map((m) => m.name).sort()).toEqual(members.map((m) => m.name));
  });

  it("marks a member for an operator's restart until it is restarted, and names no unknown one", async () => {
    const fleet = fleetOf({ replicas: 1 });
    await fleet.start();
    const changes: string[] = [];
    fleet.onChange((network) => changes.push(network));
    expect(fleet.requestRestart("devnet-light-7")).toBeUndefined();
    expect(fleet.memberNames()).toEqual(["devnet-light-0"]);
    expect(fleet.requestRestart("devnet-light-0")).toBe("devnet");
    expect(changes).toEqual(["devnet"]);
    expect(fleet.members("devnet")[0]!.restartRequested).toBe(true);
    await fleet.restart("devnet", "devnet-light-0", "manual");
    expect(fleet.members("devnet")[0]).toMatchObject({ restarts: [{ reason: "manual" }] });
    expect(fleet.members("devnet")[0]!.restartRequested).toBeUndefined();
  });

  it("keeps the routing set and reports every change", async () => {
    const fleet = fleetOf({ replicas: 2 });
    await fleet.start();
    const changes: string[] = [];
    fleet.onChange((network) => changes.push(network));
    await fleet.setRouted("devnet", "devnet-light-1", true);
    await fleet.setRouted("devnet", "devnet-light-1", true);
    expect(fleet.routedMembers("devnet").map((m) => m.name)).toEqual(["devnet-light-1"]);
    expect(changes).toEqual(["devnet"]);
  });

  it("restarts a member as a new incarnation on the same URL and records why", async () => {
    const fleet = fleetOf({ replicas: 1 });
    await fleet.start();
    const before = fleet.members("devnet")[0]!;
    const pidBefore = pidsOfMembers();
    expect(await fleet.restart("devnet", before.name, "stall")).toEqual({ outcome: "restarted" });
    const after = fleet.members("devnet")[0]!;
    expect(after.httpUrl).toBe(before.httpUrl);
    expect(after.startedAt).toBeGreaterThan(before.startedAt);
    expect(after.restarts).toEqual([{ at: expect.any(Number), reason: "stall" }]);
    expect(await chainIdAt(after.httpUrl)).toBe("0x7a69");
    await expectProcessesGone(pidBefore);
    expect(await fleet.restart("devnet", "nobody", "manual")).toEqual({ outcome: "gone" });
  });

  it("does not respawn a member that died: it stays listed, unreachable, until someone restarts it", async () => {
    const fleet = fleetOf({ replicas: 1 });
    await fleet.start();
    const changes: string[] = [];
    fleet.onChange((network) => changes.push(network));
    const member = fleet.members("devnet")[0]!;
    expect(fleet.kill("devnet", member.name)).toBe(true);
    await waitFor(() => changes.length > 0, { what: "a change after the exit" });
    await expect(chainIdAt(member.httpUrl)).rejects.toThrow(/cannot reach/);
    expect(fleet.members("devnet")).toMatchObject([{ name: member.name, startedAt: member.startedAt }]);
    expect(pidsOfMembers()).toEqual([]);
  });

  it("scales up and down, stopping the members it removes", async () => {
    const fleet = fleetOf({ replicas: 1 });
    await fleet.start();
    await fleet.scale("devnet", 3);
    const members = fleet.members("devnet");
    expect(members.map((m) => m.name)).toEqual(["devnet-light-0", "devnet-light-1", "devnet-light-2"]);
    expect(pidsOfMembers()).toHaveLength(3);
    await fleet.scale("devnet", 1);
    expect(fleet.members("devnet").map((m) => m.name)).toEqual(["devnet-light-0"]);
    expect(pidsOfMembers()).toHaveLength(1);
    await expect(chainIdAt(members[2]!.httpUrl)).rejects.toThrow(/cannot reach/);
  });

  it("lists a new member as soon as it answers, while it is still being attached (replayed), and says so", async () => {
    let attached: (() => void) | undefined;
    const fleet = fleetOf(
      { replicas: 1 },
      {
        onStarted: async (m) => {
          if (m.name !== "devnet-light-1") return;
          // The devnet replays it to the head meanwhile: seconds on a long chain.
          await new Promise<void>((resolve) => (attached = resolve));
        },
      },
    );
    await fleet.start();
    const changes: string[] = [];
    fleet.onChange(() =>
      changes.push(
        fleet
          .members("devnet")
          .map((m) => m.name)
          .join(","),
      ),
    );
    const scaling = fleet.scale("devnet", 2);
    await waitFor(() => attached !== undefined, { what: "the new member being attached" });
    expect(fleet.members("devnet").map((m) => m.name)).toEqual(["devnet-light-0", "devnet-light-1"]);
    expect(changes).toContain("devnet-light-0,devnet-light-1");
    expect(await chainIdAt(fleet.members("devnet")[1]!.httpUrl)).toBe("0x7a69");
    attached!();
    await scaling;
    expect(fleet.members("devnet").map((m) => m.name)).toEqual(["devnet-light-0", "devnet-light-1"]);
  });

  it("a member scaled away while it is being attached after a restart is no error", async () => {
    const out = new PassThrough();
    const records: Array<{ level: number; msg: string }> = [];
    out.on("data", (c: Buffer) => {
      for (const line of c.toString().split("\n").filter(Boolean)) records.push(JSON.parse(line));
    });
    let attaching: (() => void) | undefined;
    let hold = false;
    const fleet = fleetOf(
      { replicas: 2 },
      {
        logger: createLogger({ level: "debug", format: "json" }, out),
        onStarted: async (m) => {
          if (!hold || m.name !== "devnet-light-1") return;
          // The devnet replays it to the head meanwhile; scaled away, it is no devnet node any more.
          await new Promise<void>((resolve) => (attaching = resolve));
          throw new Error(`no devnet node named ${m.name}`);
        },
      },
    );
    await fleet.start();
    hold = true;
    const restart = fleet.restart("devnet", "devnet-light-1", "manual");
    await waitFor(() => attaching !== undefined, { what: "the restarted member being attached" });
    await fleet.scale("devnet", 1);
    attaching!();
    await restart;
    expect(fleet.members("devnet").map((m) => m.name)).toEqual(["devnet-light-0"]);
    expect(records.filter((r) => r.level >= 50).map((r) => r.msg)).toEqual([]);
  });

  it("runs overlapping scale calls one after another, so no member is started twice", async () => {
    const fleet = fleetOf({ replicas: 1 });
    await fleet.start();
    await Promise.all([fleet.scale("devnet", 3), fleet.scale("devnet", 2), fleet.scale("devnet", 3)]);
    expect(fleet.members("devnet").map((m) => m.name)).toEqual([
      "devnet-light-0",
      "devnet-light-1",
      "devnet-light-2",
    ]);
    expect(pidsOfMembers()).toHaveLength(3);
    await expect(fleet.scale("devnet", -1)).rejects.toThrow("replicas must be a whole number");
    await expect(fleet.scale("nowhere", 1)).rejects.toThrow("unknown network nowhere");
  });

  it("stops a member's whole process group, so a wrapper's children go too", async () => {
    const fleet = fleetOf({
      replicas: 1,
      command: ["sh", "-c", "'{anvil}' --port {port} --no-mining; true"],
    });
    await fleet.start();
    const anvils = pidsOfMembers();
    expect(anvils).toHaveLength(1);
    await fleet.stop();
    await expectProcessesGone(anvils);
  });

  it("lists a member whose command cannot start, without crashing, so the controller sees it unresponsive", async () => {
    const fleet = fleetOf({ replicas: 1, command: ["sh", "-c", "exit 3"] });
    await fleet.start();
    const [member] = fleet.members("devnet");
    expect(member?.name).toBe("devnet-light-0");
    await expect(chainIdAt(member!.httpUrl)).rejects.toThrow(/cannot reach/);
  });

  it("leaves no member running when its supervisor is killed outright", async () => {
    // `node --import tsx` rather than the tsx CLI, which would put a process of its own in between.
    const fixture = join(ROOT, "test/fleet/process/supervisor.fixture.ts");
    const supervisor = spawn(process.execPath, ["--import", "tsx", fixture], {
      cwd: ROOT,
      stdio: ["ignore", "pipe", "inherit"],
    });
    cleanup.push(() => supervisor.kill("SIGKILL"));
    let output = "";
    supervisor.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
    await waitFor(() => output.includes('"members":2'), { what: "supervisor ready", timeoutMs: 30_000 });
    const anvils = anvilsUnder(supervisor.pid!);
    expect(anvils.length).toBeGreaterThanOrEqual(2);
    supervisor.kill("SIGKILL");
    await expectProcessesGone(anvils);
  });
});
