import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runCli } from "../support/runCli.js";

describe("lightfleet config check", () => {
  it("exits 0 for the example file", async () => {
    const result = await runCli(["config", "check", "examples/lightfleet.example.yaml"]);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("ok (networks: mainnet (chain 1))");
  });

  it("exits 2 and lists every problem by path", async () => {
    const dir = await mkdtemp(join(tmpdir(), "lf-check-"));
    const file = join(dir, "bad.yaml");
    await writeFile(
      file,
      [
        "networks:",
        "  - name: old",
        "    preset: ropsten",
        "    reservedPeers: [{ name: f, http: 'not a url' }]",
        "    helth: {}",
      ].join("\n"),
    );
    const result = await runCli(["config", "check", file]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("3 problem(s)");
    expect(result.stderr).toContain("networks[0].helth: unknown option");
    expect(result.stderr).toContain("networks[0].reservedPeers[0].http: must be an http(s) URL");
    expect(result.stderr).toContain("networks[0].preset: ropsten (chain id 3) is deprecated");
    expect(result.stderr).not.toMatch(/at .*\.ts:\d+/); // no stack trace
  });

  it("exits 2 for a missing file and for bad usage", async () => {
    const missing = await runCli(["config", "check", "/nonexistent.yaml"]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("file not found");
    const usage = await runCli(["config", "check"]);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain("missing required argument");
  });
});
