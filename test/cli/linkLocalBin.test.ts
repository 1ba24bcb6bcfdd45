import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, readlinkSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { linkLocalBin } from "../../src/cli/linkLocalBin.js";
import { ROOT } from "../support/runCli.js";

const cleanup: Array<() => unknown> = [];
afterEach(() => {
  for (const fn of cleanup.splice(0)) fn();
});

function checkout(withBinDir: boolean): string {
  const root = mkdtempSync(join(tmpdir(), "lightfleet-bin-"));
  cleanup.push(() => rmSync(root, { recursive: true, force: true }));
  mkdirSync(join(root, "dist"));
  writeFileSync(join(root, "dist", "cli.js"), "#!/usr/bin/env node\nconsole.log('lightfleet ran');\n");
  if (withBinDir) mkdirSync(join(root, "node_modules", ".bin"), { recursive: true });
  return root;
}

describe("linkLocalBin", () => {
  it("links lightfleet into node_modules/.bin, executable, again and again", () => {
    const root = checkout(true);
    for (let i = 0; i < 2; i++) {
      const link = linkLocalBin(root)!;
      expect(readlinkSync(link)).toBe(join("..", "..", "dist", "cli.js"));
      expect(execFileSync(link, { encoding: "utf8" })).toBe("lightfleet ran\n");
    }
    expect(statSync(join(root, "dist", "cli.js")).mode & 0o111).not.toBe(0);
  });

  it("does nothing without node_modules/.bin, and names a missing build", () => {
    expect(linkLocalBin(checkout(false))).toBeUndefined();
    const empty = mkdtempSync(join(tmpdir(), "lightfleet-bin-"));
    cleanup.push(() => rmSync(empty, { recursive: true, force: true }));
    expect(() => linkLocalBin(empty)).toThrow(/dist\/cli\.js is missing: build first/);
  });

  it("runs after every build", () => {
    const scripts = (
      JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { scripts: Record<string, string> }
    ).scripts;
    expect(scripts.postbuild).toBe("node dist/cli/linkLocalBin.js");
  });
});
