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

  it("refuses time thresholds a fast chain cannot honour, naming each path", async () => {
    const dir = await mkdtemp(join(tmpdir(), "lf-check-"));
    const file = join(dir, "fast.yaml");
    await writeFile(
      file,
      [
        "networks:",
        "  - name: fast",
        "    chainId: 7",
        "    blockTime: 250ms",
        "    reservedPeers: [{ name: f, http: 'http://127.0.0.1:1' }]",
        "    health: { maxLagSeconds: 750ms, peerHaltAfter: 400ms, stallAfter: 300ms }",
      ].join("\n"),
    );
    const result = await runCli(["config", "check", file]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(
      "networks[0].health.maxLagSeconds: is 750ms, under the one-second resolution",
    );
    expect(result.stderr).toContain("networks[0].health.peerHaltAfter: is 400ms, within two block intervals");
    expect(result.stderr).toContain("networks[0].health.stallAfter: is 300ms, within two block intervals");
  });

  it("warns, still exiting 0, when polled peers may look halted between two polls", async () => {
    const dir = await mkdtemp(join(tmpdir(), "lf-check-"));
    const file = join(dir, "polled.yaml");
    await writeFile(
      file,
      [
        "networks:",
        "  - name: fast",
        "    chainId: 7",
        "    blockTime: 250ms",
        "    reservedPeers: [{ name: f, http: 'http://127.0.0.1:1' }]",
        "    health: { probeInterval: 2s, peerHaltAfter: 3s }",
      ].join("\n"),
    );
    const result = await runCli(["config", "check", file]);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("ok (networks: fast (chain 7)), 1 warning(s)");
    expect(result.stderr).toContain("warning: networks[0].health.peerHaltAfter: is 3s");
    expect(result.stderr).toContain("reservedPeers f has no ws URL");
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
