import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ROOT, cliArgs } from "../support/runCli.js";

/**
 * A short command (a fault, a restart request, a status) loads only what it needs: the packages of the long-running
 * components (the Kubernetes client, the Ethereum libraries, the HTTP server, Redis, Postgres, SQLite) each cost
 * hundreds of milliseconds to load, which an operator typing a command feels. Checked by the modules each command
 * resolves, not by its time (the machine's load decides that).
 */
const HEAVY = [
  "@kubernetes/client-node",
  "ethers",
  "viem",
  "express",
  "ioredis",
  "pg",
  "better-sqlite3",
  "kysely",
  "ws",
];

const dir = mkdtempSync(join(tmpdir(), "lightfleet-imports-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The packages under node_modules a command resolved, by name. */
function packagesLoaded(args: string[], name: string): Promise<string[]> {
  const file = join(dir, `${name}.txt`);
  const hook = join(ROOT, "test/support/imports/recordImports.mjs");
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", hook, ...cliArgs(args)], {
      cwd: ROOT,
      env: { ...process.env, LIGHTFLEET_RECORD_IMPORTS: file },
      stdio: ["ignore", "ignore", "ignore"],
    });
    child.on("error", reject);
    child.on("close", () => {
      const urls = readFileSync(file, "utf8").split("\n").filter(Boolean);
      const names = urls.flatMap((url) => {
        const match = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
        return match ? [match[1]!] : [];
      });
      resolve([...new Set(names)]);
    });
  });
}

// An admin port nobody listens on: each command fails to reach it, after loading what it needs.
const NOBODY = "http://127.0.0.1:9";

describe("short commands load no heavy package", () => {
  it.each([
    ["node restart", ["node", "restart", "mainnet-light-1", "--admin", NOBODY]],
    ["devnet status", ["devnet", "status", "--admin", NOBODY]],
    ["devnet lag", ["devnet", "lag", "mainnet-light-1", "5", "--admin", NOBODY]],
    ["devnet mine", ["devnet", "mine", "mainnet", "--admin", NOBODY]],
    ["config check", ["config", "check", "examples/devnet.yaml"]],
    ["--version", ["--version"]],
  ])("%s", async (name, args) => {
    const loaded = await packagesLoaded(args, name.replace(/\W+/g, "-"));
    // The recorder saw the command load its own modules (commander at least): it works.
    expect(loaded).toContain("commander");
    expect(loaded.filter((p) => HEAVY.includes(p))).toEqual([]);
  });
});
