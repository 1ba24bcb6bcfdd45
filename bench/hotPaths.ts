/**
 * The gateway's answers that never reach a node, beside a bare node:http server (bench/bareHttp.ts):
 *
 * - eth_blockNumber (from the served head), against the bare server answering a constant eth_blockNumber;
 * - eth_getBlockByHash of the head block, which the response cache holds but is not final yet (each hit checks that
 *   a serving node's chain still holds it);
 * - eth_getBlockByHash of a finalized block (final: served without any check);
 *
 * the two cache hits against the bare server answering the same block's bytes (so both write as much). Interleaved
 * rounds, the median of each: requests/s, its ratio to its bare row of the same round, and the server's CPU per call
 * (from /proc, steadier than rates on a shared machine), also less the server's CPU while idle (measured first, for a
 * few seconds: the gateway follows its node's head and recounts every second). A few seconds per row and round.
 *
 *   npm run bench:hot-paths -- [seconds=5] [rounds=3] [one-core]
 *
 * With `one-core`, each server is pinned to the last core and the bench, its load generator and the node to the others
 * (bench/cpuPinning.ts), as a machine with a core per process runs them; each row then says how busy the load side
 * kept its cores (near 100%, the load side and not the server bounded its rate).
 *
 * The gateway and the bare servers run compiled (tsc, as the image runs them); with LIGHTFLEET_BENCH_TSX=1 under tsx,
 * as before (tsx adds work to every function created, which a request makes several of). With
 * LIGHTFLEET_GATEWAY_PROFILE=<dir> the gateway runs with `--cpu-prof` and writes its profile there on exit.
 */
import autocannon from "autocannon";
import { startDevnet } from "../src/devnet/devnet.js";
import { compileForBench, spawnGatewayProcess, spawnListening, WARM_UP_SECONDS } from "./gatewayProcess.js";
import { mineUntilFinalized } from "./peers/chainForPeers.js";
import { loadBusy, loadSideCpuSeconds, pinServer, startOneCore } from "./cpuPinning.js";
import { cpuSeconds } from "./processUsage.js";
import { expectSameAnswer } from "./sameAnswer.js";

const SECONDS = Number(process.argv[2] ?? 5);
const ROUNDS = Number(process.argv[3] ?? 3);
const CONNECTIONS = 16;
const IDLE_SECONDS = 3;
const ONE_CORE = process.argv[4] === "one-core";
if (ONE_CORE) startOneCore();

const compiled = process.env.LIGHTFLEET_BENCH_TSX === "1" ? undefined : compileForBench();
console.log(compiled ? `servers compiled into ${compiled}` : "servers under tsx");
const devnet = await startDevnet({
  networks: [{ name: "bench", chainId: 31_337, lightNodes: 1 }],
  blockTimeMs: 0,
});
const stops: Array<() => Promise<void> | void> = [() => devnet.stop()];
try {
  const light = devnet.nodes("bench").find((n) => n.role === "light")!;
  // A finalized block above 0 (anvil's trails its head by 64 blocks), for the final row.
  await mineUntilFinalized(() => devnet.mine("bench"), light.httpUrl);
  const profile = process.env.LIGHTFLEET_GATEWAY_PROFILE;
  const gateway = await spawnGatewayProcess({
    workers: 1,
    policy: "none",
    ...light,
    ...(profile ? { nodeArgs: ["--cpu-prof", `--cpu-prof-dir=${profile}`] } : {}),
    ...(compiled ? { compiled } : {}),
    // The default head poll (and recount), as deployed: the bench's usual 100 ms costs CPU per second, not per call.
    settings: { headPollInterval: "1s" },
  });
  stops.push(() => gateway.stop());

  const post = async (url: string, body: unknown) =>
    (await (
      await fetch(url, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      })
    ).text()) as string;
  const blockOf = async (tag: string) =>
    (
      JSON.parse(
        await post(light.httpUrl, {
          jsonrpc: "2.0",
          id: 1,
          method: "eth_getBlockByNumber",
          params: [tag, false],
        }),
      ) as { result: { hash: string } }
    ).result;
  const byHash = (hash: string) => ({
    jsonrpc: "2.0",
    id: 1,
    method: "eth_getBlockByHash",
    params: [hash, false],
  });
  const head = byHash((await blockOf("latest")).hash);
  const finalizedBlock = await blockOf("finalized");
  const finalized = byHash(finalizedBlock.hash);
  // The first calls fill the cache.
  await post(`${gateway.url}/`, head);
  await post(`${gateway.url}/`, finalized);

  const bare = await spawnListening("bareHttp.ts", [], compiled);
  stops.push(() => bare.stop());
  const bareBlock = await spawnListening("bareHttp.ts", [JSON.stringify(finalizedBlock)], compiled);
  stops.push(() => bareBlock.stop());
  const blockNumber = { jsonrpc: "2.0", id: 1, method: "eth_blockNumber", params: [] };

  // Each server's CPU while idle (the gateway's head following and recounts), taken out of its CPU per call.
  const idleMsPerSecond = new Map<number, number>();
  const pids = [gateway.pid, bare.pid, bareBlock.pid];
  if (ONE_CORE) for (const pid of pids) pinServer(pid);
  const nodePid = devnet.status().nodes.find((n) => n.name === light.name)?.pid;
  const idleBefore = pids.map((pid) => cpuSeconds(pid));
  await new Promise((resolve) => setTimeout(resolve, IDLE_SECONDS * 1000));
  for (const [i, pid] of pids.entries())
    idleMsPerSecond.set(pid, ((cpuSeconds(pid) - idleBefore[i]!) / IDLE_SECONDS) * 1000);
  console.log(
    `idle CPU (ms per second): gateway ${idleMsPerSecond.get(gateway.pid)!.toFixed(1)}, bare ` +
      `${idleMsPerSecond.get(bare.pid)!.toFixed(1)}`,
  );

  interface Run {
    rps: number;
    /** CPU per call, and the same less the server's idle CPU over the run. */
    cpu: number;
    callCpu: number;
    /** With `one-core`: how busy the load side kept its cores, 0-1. */
    loadBusy: number;
  }
  const load = (url: string, body: unknown, seconds: number) =>
    autocannon({
      url,
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
      connections: CONNECTIONS,
      duration: seconds,
      workers: 1,
    });
  const run = async (url: string, pid: number, body: unknown): Promise<Run> => {
    const before = cpuSeconds(pid);
    const loadBefore = loadSideCpuSeconds(nodePid);
    const started = performance.now();
    const result = await load(url, body, SECONDS);
    const used = cpuSeconds(pid) - before;
    const busy = loadBusy(loadSideCpuSeconds(nodePid) - loadBefore, (performance.now() - started) / 1000);
    const idle = (idleMsPerSecond.get(pid)! / 1000) * ((performance.now() - started) / 1000);
    const calls = Math.max(1, result.requests.total);
    if (result.errors + result.non2xx > 0) throw new Error(`${url}: ${result.errors + result.non2xx} errors`);
    return {
      rps: result.requests.average,
      cpu: (used / calls) * 1e6,
      callCpu: ((used - idle) / calls) * 1e6,
      loadBusy: busy,
    };
  };
  /** Each row: what it runs, and the row of the same round its rate is compared with. */
  const rows: Array<{
    name: string;
    url: string;
    pid: number;
    body: unknown;
    against?: string;
    runs: Run[];
  }> = [
    { name: "bare eth_blockNumber", url: bare.url, pid: bare.pid, body: blockNumber, runs: [] },
    { name: "bare block", url: bareBlock.url, pid: bareBlock.pid, body: finalized, runs: [] },
    {
      name: "gateway eth_blockNumber",
      ...at(gateway),
      body: blockNumber,
      against: "bare eth_blockNumber",
      runs: [],
    },
    { name: "cache hit, head block", ...at(gateway), body: head, against: "bare block", runs: [] },
    { name: "cache hit, finalized", ...at(gateway), body: finalized, against: "bare block", runs: [] },
  ];
  // Unmeasured first, as bench:gateway does: until V8 has compiled each server's path for the call.
  console.log(`warming up: ${WARM_UP_SECONDS} s of each row, not measured`);
  for (const row of rows) await load(row.url, row.body, WARM_UP_SECONDS);
  for (let round = 0; round < ROUNDS; round++)
    for (const row of rows) {
      // The finalized block's hit and the bare block write the same bytes with the same headers. Checked just before
      // the bare block's first run, not when it starts: a bare server that answered and then sat idle can have node's
      // nextTick turn to its slow path (see bench:call-instructions), which the gateway guards against.
      if (round === 0 && row.name === "bare block") {
        const bytes = await expectSameAnswer(`${gateway.url}/`, `${bareBlock.url}/`, finalized);
        console.log(`cache hit and bare block: the same answer, ${bytes} bytes, the same headers`);
      }
      row.runs.push(await run(row.url, row.pid, row.body));
    }
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
  for (const row of rows) {
    const base = rows.find((r) => r.name === row.against);
    const ratios = base ? row.runs.map((r, i) => r.rps / base.runs[i]!.rps) : [];
    console.log(
      `${row.name.padEnd(24)} ${median(row.runs.map((r) => r.rps))
        .toFixed(0)
        .padStart(6)} req/s ${median(row.runs.map((r) => r.cpu))
        .toFixed(1)
        .padStart(5)} us CPU/call (${median(row.runs.map((r) => r.callCpu)).toFixed(1)} less idle)` +
        (base ? ` ${median(ratios).toFixed(2)}x ${base.name}` : "") +
        (ONE_CORE ? `, load side ${(median(row.runs.map((r) => r.loadBusy)) * 100).toFixed(0)}% busy` : "") +
        ` (rounds: ${row.runs.map((r) => `${r.rps.toFixed(0)}/s ${r.cpu.toFixed(1)} us`).join(", ")})`,
    );
  }
} finally {
  for (const stop of stops.reverse()) await stop();
}

/** The gateway's URL and process, for a row. */
function at(server: { url: string; pid: number }) {
  return { url: `${server.url}/`, pid: server.pid };
}
