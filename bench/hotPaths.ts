/**
 * The gateway's two answers that never reach a node, beside a bare node:http server answering a constant
 * (bench/bareHttp.ts): eth_blockNumber (from the served head) and eth_getBlockByHash of a block the response cache
 * holds (a block not final yet: each hit checks that a serving node's chain still holds it). Interleaved rounds,
 * the median of each; requests/s and the server's CPU per call (from /proc). A few seconds per round.
 *
 *   npm run bench:hot-paths -- [seconds=5] [rounds=3]
 *
 * With LIGHTFLEET_GATEWAY_PROFILE=<dir> the gateway runs with `--cpu-prof` and writes its profile there on exit.
 */
import autocannon from "autocannon";
import { startDevnet } from "../src/devnet/devnet.js";
import { spawnGatewayProcess, spawnListening } from "./gatewayProcess.js";
import { cpuSeconds } from "./processUsage.js";

const SECONDS = Number(process.argv[2] ?? 5);
const ROUNDS = Number(process.argv[3] ?? 3);
const CONNECTIONS = 16;

const devnet = await startDevnet({
  networks: [{ name: "bench", chainId: 31_337, lightNodes: 1 }],
  blockTimeMs: 0,
});
const stops: Array<() => Promise<void> | void> = [() => devnet.stop()];
try {
  for (let i = 0; i < 5; i++) await devnet.mine("bench");
  const light = devnet.nodes("bench").find((n) => n.role === "light")!;
  const profile = process.env.LIGHTFLEET_GATEWAY_PROFILE;
  const gateway = await spawnGatewayProcess({
    workers: 1,
    policy: "none",
    ...light,
    ...(profile ? { nodeArgs: ["--cpu-prof", `--cpu-prof-dir=${profile}`] } : {}),
  });
  stops.push(() => gateway.stop());
  const bare = await spawnListening("bareHttp.ts");
  stops.push(() => bare.stop());

  const post = async (url: string, body: unknown) =>
    (await (
      await fetch(url, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      })
    ).json()) as { result: { hash: string } };
  const head = await post(light.httpUrl, {
    jsonrpc: "2.0",
    id: 1,
    method: "eth_getBlockByNumber",
    params: ["latest", false],
  });
  const blockNumber = { jsonrpc: "2.0", id: 1, method: "eth_blockNumber", params: [] };
  const byHash = { jsonrpc: "2.0", id: 1, method: "eth_getBlockByHash", params: [head.result.hash, false] };
  // The first call fills the cache.
  await post(`${gateway.url}/`, byHash);

  const run = async (url: string, pid: number, body: unknown) => {
    const before = cpuSeconds(pid);
    const result = await autocannon({
      url,
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
      connections: CONNECTIONS,
      duration: SECONDS,
      workers: 1,
    });
    const cpu = ((cpuSeconds(pid) - before) / Math.max(1, result.requests.total)) * 1e6;
    if (result.errors + result.non2xx > 0) throw new Error(`${url}: ${result.errors + result.non2xx} errors`);
    return { rps: result.requests.average, cpu };
  };
  const rows = {
    "bare node:http": [] as Array<{ rps: number; cpu: number }>,
    "gateway eth_blockNumber": [] as Array<{ rps: number; cpu: number }>,
    "gateway cache hit": [] as Array<{ rps: number; cpu: number }>,
  };
  for (let round = 0; round < ROUNDS; round++) {
    rows["bare node:http"].push(await run(bare.url, bare.pid, blockNumber));
    rows["gateway eth_blockNumber"].push(await run(`${gateway.url}/`, gateway.pid, blockNumber));
    rows["gateway cache hit"].push(await run(`${gateway.url}/`, gateway.pid, byHash));
  }
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
  const bareRps = median(rows["bare node:http"].map((r) => r.rps));
  for (const [name, runs] of Object.entries(rows)) {
    const rps = median(runs.map((r) => r.rps));
    const cpu = median(runs.map((r) => r.cpu));
    console.log(
      `${name.padEnd(24)} ${rps.toFixed(0).padStart(6)} req/s ${cpu.toFixed(1).padStart(5)} us CPU/call ` +
        `${(rps / bareRps).toFixed(2)}x bare (rounds: ${runs.map((r) => r.rps.toFixed(0)).join(", ")})`,
    );
  }
} finally {
  for (const stop of stops.reverse()) await stop();
}
