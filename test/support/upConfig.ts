import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { onTestFinished } from "vitest";
import { GETH_MEMBER_COMMAND } from "../../src/devnet/geth/gethProcess.js";

/** Scaling that reacts within a test's seconds: 1 to 3 nodes, a 2 s rate window, scale-down after 3 s. */
export function fastScaling(targetRequestsPerNode: number): Record<string, unknown> {
  return {
    minReplicas: 1,
    maxReplicas: 3,
    targetRequestsPerNode,
    rateWindow: "2s",
    scaleDownStabilization: "3s",
  };
}

export interface UpConfigOptions {
  /** Full nodes of the devnet network `alpha` (default 2). */
  fullNodes?: number;
  /** Light nodes the process fleet starts (default 2). */
  replicas?: number;
  /** `log.format` (default json). */
  logFormat?: "json" | "auto";
  /** Extra `health` settings over the fast defaults (200 ms probes, 2 probes to flip). */
  health?: Record<string, unknown>;
  /** `scaling` of `alpha`, when the test scales. */
  scaling?: Record<string, unknown>;
  /** The devnet's `basePort` (default 0, ephemeral ports). */
  devnetBasePort?: number;
  /** Runs the devnet and the fleet's light nodes on geth, this executable. */
  geth?: string;
  /** Block interval (default 500ms). */
  blockTime?: string;
  /** More `gateway` settings (replicas, say) over the loopback host and ephemeral port. */
  gateway?: Record<string, unknown>;
}

/**
 * Writes a `lightfleet up` config for one devnet network `alpha` (blocks every 500 ms, every server on 127.0.0.1 port
 * 0, data in a temporary directory removed when the test finishes) and returns its path. Call it inside a test.
 */
export function writeUpConfig(options: UpConfigOptions = {}): string {
  const dir = mkdtempSync(join(tmpdir(), "lightfleet-up-"));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  const health = { probeInterval: "200ms", unhealthyAfter: 2, healthyAfter: 2, ...options.health };
  const file = join(dir, "up.yaml");
  // YAML takes JSON as flow mappings.
  writeFileSync(
    file,
    [
      `log: { level: info, format: ${options.logFormat ?? "json"} }`,
      "admin: { host: 127.0.0.1, port: 0 }",
      `gateway: ${JSON.stringify({ host: "127.0.0.1", port: 0, ...options.gateway })}`,
      "keys: { host: 127.0.0.1, port: 0 }",
      `dataDir: ${JSON.stringify(join(dir, "data"))}`,
      "devnet:",
      `  blockTime: ${options.blockTime ?? "500ms"}`,
      ...(options.geth ? ["  implementation: geth", `  gethBinary: ${JSON.stringify(options.geth)}`] : []),
      `  basePort: ${options.devnetBasePort ?? 0}`,
      `  networks: [{ name: alpha, chainId: 31337, fullNodes: ${options.fullNodes ?? 2} }]`,
      "networks:",
      "  - name: alpha",
      "    chainId: 31337",
      `    blockTime: ${options.blockTime ?? "500ms"}`,
      `    health: ${JSON.stringify(health)}`,
      ...(options.scaling ? [`    scaling: ${JSON.stringify(options.scaling)}`] : []),
      "    nodes:",
      options.geth
        ? `      command: ${JSON.stringify(GETH_MEMBER_COMMAND)}`
        : '      command: ["{anvil}", "--port", "{port}", "--chain-id", "{chainId}", "--timestamp", "{genesisTimestamp}", "--no-mining"]',
      `      replicas: ${options.replicas ?? 2}`,
    ].join("\n"),
  );
  return file;
}
