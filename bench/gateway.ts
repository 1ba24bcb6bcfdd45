/**
 * Gateway throughput and latency against the same anvil light node called directly, in the same run: requests per
 * second and p99 latency of eth_getBalance (forwarded to the node) and eth_blockNumber (answered from the served head),
 * with the ratio gateway/direct. Bounded: each run lasts a few seconds.
 *
 *   npx tsx bench/gateway.ts [seconds=5] [connections=16]
 */
import autocannon from "autocannon";
import { Registry } from "prom-client";
import { parseConfig } from "../src/config/loadConfig.js";
import { DEV_ACCOUNT } from "../src/devnet/devTransactions.js";
import { startDevnet } from "../src/devnet/devnet.js";
import { startGateway } from "../src/gateway/gateway.js";
import { StaticUpstreamSource } from "../src/gateway/upstreams/staticSource.js";
import { silentLogger } from "../src/log/logger.js";

const SECONDS = Number(process.argv[2] ?? 5);
const CONNECTIONS = Number(process.argv[3] ?? 16);

const devnet = await startDevnet({
  networks: [{ name: "bench", chainId: 31_337, lightNodes: 1 }],
  blockTimeMs: 0,
});
for (let i = 0; i < 5; i++) await devnet.mine("bench");
const light = devnet.nodes("bench").find((n) => n.role === "light")!;
const config = parseConfig({
  gateway: { host: "127.0.0.1", port: 0 },
  networks: [
    {
      name: "bench",
      chainId: 31_337,
      blockTime: "12s",
      reservedPeers: [{ name: "light", http: light.httpUrl }],
      gateway: { default: true },
    },
  ],
});
const gateway = await startGateway({
  config,
  source: new StaticUpstreamSource([
    { name: light.name, network: "bench", httpUrl: light.httpUrl, wsUrl: light.wsUrl, routed: true },
  ]),
  logger: silentLogger(),
  registry: new Registry(),
});
while (gateway.servedHead("bench") === undefined) await new Promise((r) => setTimeout(r, 50));

async function run(url: string, body: unknown): Promise<{ rps: number; p99: number; errors: number }> {
  const result = await autocannon({
    url,
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
    connections: CONNECTIONS,
    duration: SECONDS,
  });
  return { rps: result.requests.average, p99: result.latency.p99, errors: result.errors + result.non2xx };
}

const calls = {
  eth_getBalance: { jsonrpc: "2.0", id: 1, method: "eth_getBalance", params: [DEV_ACCOUNT, "latest"] },
  eth_blockNumber: { jsonrpc: "2.0", id: 1, method: "eth_blockNumber", params: [] },
};
try {
  console.log(`gateway vs anvil directly: ${CONNECTIONS} connections, ${SECONDS} s per run`);
  for (const [name, body] of Object.entries(calls)) {
    const direct = await run(light.httpUrl, body);
    const through = await run(`${gateway.url}/`, body);
    console.log(
      `  ${name.padEnd(16)} direct ${direct.rps.toFixed(0).padStart(6)} req/s p99 ${direct.p99} ms | gateway ${through.rps
        .toFixed(0)
        .padStart(
          6,
        )} req/s p99 ${through.p99} ms | throughput ratio ${(through.rps / direct.rps).toFixed(2)}x` +
        (direct.errors + through.errors > 0 ? ` | errors ${direct.errors}/${through.errors}` : ""),
    );
  }
} finally {
  await gateway.stop();
  await devnet.stop();
}
