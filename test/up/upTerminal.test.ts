import { spawn } from "node:child_process";
import { afterEach, describe, expect, it } from "vitest";
import { expectProcessesGone } from "../support/devnet.js";
import { anvilsUnder, commandLine, descendants } from "../support/processTree.js";
import { findTool } from "../support/requireTool.js";
import { ROOT } from "../support/runCli.js";
import { writeUpConfig } from "../support/upConfig.js";
import { waitFor } from "../support/waitFor.js";

const cleanup: Array<() => unknown> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

// Colour codes (ESC [ ... m) around the state names.
const ANSI = new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*[A-Za-z]`, "g");

describe("lightfleet up on a terminal", () => {
  it("prints where everything runs, then one line per state change", async () => {
    // `script` (util-linux) runs `up` on a pseudo-terminal, as a person running npm start sees it.
    const script = findTool("script", "bsdutils");
    if (!script.path) throw new Error(script.missing);
    const config = writeUpConfig({ logFormat: "auto", health: { stallAfter: "1m" } });
    // `exec`: whatever shell `script` uses (dash does not exec a last command by itself) becomes `up`, so SIGINT
    // below reaches `up` and not a wrapper shell that would ignore it.
    const command = `exec '${process.execPath}' --import tsx src/cli.ts up --config '${config}'`;
    const terminal = spawn(script.path, ["-qfec", command, "/dev/null"], {
      cwd: ROOT,
      stdio: ["pipe", "pipe", "pipe"],
    });
    let screen = "";
    terminal.stdout.on("data", (chunk: Buffer) => (screen += chunk.toString().replace(ANSI, "")));
    const up = () =>
      descendants(terminal.pid!).find((pid) =>
        commandLine(pid).startsWith(`${process.execPath} --import tsx src/cli.ts up`),
      );
    cleanup.push(() => {
      const pid = up();
      if (pid !== undefined) process.kill(pid, "SIGKILL");
      terminal.kill("SIGKILL");
    });

    // The terminal delivers the banner in pieces: wait for its last line before reading it.
    await waitFor(() => screen.includes("Ctrl-C stops everything."), {
      what: "the whole banner",
      timeoutMs: 30_000,
    });
    const admin = /admin\s+(http:\/\/127\.0\.0\.1:\d+)/.exec(screen)![1]!;
    expect(screen).toMatch(/lightfleet up: alpha \(chain 31337\)/);
    expect(screen).toMatch(/alpha-full-0\s+http:\/\/127\.0\.0\.1:\d+\s+\(full node, a block every 500 ms\)/);
    expect(screen).toMatch(/alpha-light-1\s+http:\/\/127\.0\.0\.1:\d+\s+\(light node\)/);
    // In lightfleet's own checkout the hint names the linked command (npx would first read the whole tree there).
    expect(screen).toContain("Inject a fault: node_modules/.bin/lightfleet devnet lag alpha-light-1 5");
    // Each node turns Healthy in its own round: wait for both, and for the summary line that follows them.
    await waitFor(
      () =>
        /alpha-light-1\s+Starting -> Healthy/.test(screen) &&
        /alpha\s+head \d+\s+2\/2 healthy\s+routed: alpha-light-0 alpha-light-1/.test(screen),
      { what: "both nodes Healthy and routed", timeoutMs: 20_000 },
    );
    // JSON logs stay off the terminal.
    expect(screen).not.toMatch(/^\{"level"/m);

    // Lagged at once, perhaps still at genesis: a node that was in step there reads as blocks behind (not as "reports
    // height 0", which is for a node that never synced).
    const fault = await fetch(`${admin}/devnet/faults/alpha-light-1`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ kind: "lag", blocks: 6 }),
    });
    expect(fault.status).toBe(200);
    await waitFor(
      () => /alpha-light-1\s+Healthy -> Lagging\s+\(\d+ blocks \(\d+ s\) behind reference \d+\)/.test(screen),
      {
        what: () => `the Lagging line; the terminal showed:\n${screen}`,
        timeoutMs: 10_000,
      },
    );
    await waitFor(() => /1\/2 healthy\s+routed: alpha-light-0\n/.test(screen.replace(/\r/g, "")), {
      what: "the pool summary",
    });

    // A reserved peer that dies and comes back gets one line each.
    const peerFault = (kind: string) =>
      fetch(`${admin}/devnet/faults/alpha-full-0`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ kind }),
      });
    expect((await peerFault("kill")).status).toBe(200);
    await waitFor(() => /alpha-full-0\s+reserved peer down \(unreachable\)/.test(screen), {
      what: "the peer-down line",
      timeoutMs: 10_000,
    });
    expect((await peerFault("heal")).status).toBe(200);
    await waitFor(() => /alpha-full-0\s+reserved peer back(, replaying)? \(head \d+/.test(screen), {
      what: "the peer-back line",
      timeoutMs: 15_000,
    });
    expect(screen.match(/alpha-full-0\s+reserved peer down/g)).toHaveLength(1);

    const pid = up()!;
    const anvils = anvilsUnder(pid);
    expect(anvils).toHaveLength(4);
    let exit: { code: number | null } | undefined;
    terminal.once("exit", (code) => (exit = { code }));
    // Ctrl-C: the terminal signals its whole foreground process group (up leads it), not up alone. The children are
    // in groups of their own, so only up hears it and stops them in order: no node reads as out of reach.
    process.kill(-pid, "SIGINT");
    expect(await waitFor(() => exit, { what: "up to exit after SIGINT", timeoutMs: 20_000 })).toEqual({
      code: 0,
    });
    await expectProcessesGone(anvils);
    expect(screen).not.toContain("out of reach");
  });
});
