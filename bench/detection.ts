/**
 * Detection time: from a light node's lag crossing the threshold to the node leaving routing, over injected faults,
 * on the real single-host system (`lightfleet up`'s devnet, process fleet and controller on ephemeral ports). Prints
 * the median and max against the baseline of one block interval plus one probe interval (the goal: under it).
 *
 * The crossing is the moment the devnet produces the block that puts the held-back node more than maxLagBlocks behind
 * (its block log, polled every few ms in this process): the earliest a full node can have it, so propagation to the
 * peers counts against the controller. Lag in seconds is switched off so the threshold is exactly one block.
 *
 *   npx tsx bench/detection.ts [faults=20] [blockMs=1000] [probeMs=1000]
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startUp } from "../src/up/runUp.js";

const FAULTS = Number(process.argv[2] ?? 20);
const BLOCK_MS = Number(process.argv[3] ?? 1_000);
const PROBE_MS = Number(process.argv[4] ?? 1_000);
const MAX_LAG = 3;
const NETWORK = "bench";
const LIGHT_NODES = 3;

const dir = mkdtempSync(join(tmpdir(), "lightfleet-bench-detection-"));
const config = join(dir, "bench.yaml");
writeFileSync(
  config,
  `
log: { level: warn, format: json }
admin: { host: 127.0.0.1, port: 0 }
gateway: { host: 127.0.0.1, port: 0 }
keys: { host: 127.0.0.1, port: 0 }
dataDir: ${JSON.stringify(join(dir, "data"))}
devnet:
  blockTime: ${BLOCK_MS}ms
  networks: [{ name: ${NETWORK}, chainId: 31337, fullNodes: 2 }]
networks:
  - name: ${NETWORK}
    chainId: 31337
    blockTime: ${BLOCK_MS}ms
    health: { probeInterval: ${PROBE_MS}ms, maxLagBlocks: ${MAX_LAG}, maxLagSeconds: 1h }
    nodes:
      command: ["{anvil}", "--port", "{port}", "--chain-id", "{chainId}", "--timestamp", "{genesisTimestamp}", "--no-mining"]
      replicas: ${LIGHT_NODES}
`,
);

async function until<T>(check: () => T | undefined | false, what: string, timeoutMs = 60_000): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const value = check();
    if (value) return value;
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

const up = await startUp({ config, logFormat: "json" });
const { devnet, fleet } = up.context;
if (!devnet || !fleet) throw new Error("the bench config needs a devnet and a process fleet");
const routed = (node: string) => fleet.members(NETWORK).find((m) => m.name === node)?.routed === true;
const leftRoutingAt = new Map<string, number>();
fleet.onChange(() => {
  for (const m of fleet.members(NETWORK))
    if (!m.routed && !leftRoutingAt.has(m.name)) leftRoutingAt.set(m.name, performance.now());
});

const samples: number[] = [];
try {
  const names = fleet.members(NETWORK).map((m) => m.name);
  await until(() => names.every(routed), "every light node routed");
  for (let i = 0; i < FAULTS; i++) {
    const node = names[i % names.length]!;
    leftRoutingAt.delete(node);
    // Held MAX_LAG + 2 behind: it stops climbing now (at whatever head it has), crosses the threshold when the chain is
    // MAX_LAG + 1 blocks past that, and stays beyond it whatever the propagation races.
    await devnet.fault(node, { kind: "lag", blocks: MAX_LAG + 2 });
    const frozenAt =
      devnet.status().nodes.find((n) => n.name === node)?.head?.number ?? devnet.head(NETWORK).number;
    const crossedAt = await until(
      () => devnet.head(NETWORK).number > frozenAt + MAX_LAG && performance.now(),
      "the crossing block",
    );
    const left = await until(() => leftRoutingAt.get(node), `${node} to leave routing`);
    samples.push(left - crossedAt);
    process.stdout.write(
      `fault ${i + 1}/${FAULTS} ${node}: left routing ${(left - crossedAt).toFixed(0)} ms after crossing\n`,
    );
    await devnet.fault(node, { kind: "heal" });
    await until(() => routed(node), `${node} routed again`);
  }
} finally {
  await up.stop();
  rmSync(dir, { recursive: true, force: true });
}

samples.sort((a, b) => a - b);
const median = samples[Math.floor(samples.length / 2)]!;
const max = samples.at(-1)!;
const baseline = BLOCK_MS + PROBE_MS;
process.stdout.write(
  [
    `detection over ${samples.length} lag faults (block ${BLOCK_MS} ms, probe ${PROBE_MS} ms, maxLagBlocks ${MAX_LAG}, unhealthyAfter 2):`,
    `  median ${median.toFixed(0)} ms  max ${max.toFixed(0)} ms`,
    `  baseline (one block interval + one probe interval) ${baseline} ms`,
    `  ratio: median ${(median / baseline).toFixed(2)}  max ${(max / baseline).toFixed(2)}  (goal: under 1)`,
    "",
  ].join("\n"),
);
