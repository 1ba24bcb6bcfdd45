/**
 * Slow light nodes, in one run: three devnet light nodes, every one `slow` (profile light: state reads delayed by a
 * log-normal time, p50 50 ms, p99 2 s), and a closed loop of clients calling eth_call:
 *
 * - directly to one slow node (through its devnet front): the baseline;
 * - eRPC over the same three nodes, where its binary is there (bench/peers/peers.ts), with a hedge policy after the
 *   recent p90, 20 ms to 1 s, one hedge; it has no budget, so its extra calls are counted from its own metrics;
 * - through the gateway (`lightfleet gateway` as a process of its own, a fresh one per row) over the three, hedging
 *   off;
 * - the same with hedging on (the defaults: at most 10% extra calls, hedged after the node's recent p90);
 * - the same with eRPC's measured extra calls as its budget (hedged after the node's recent (1 - budget)
 *   quantile): p99 at one budget. proxyd has no hedging and is not in this run.
 *
 * Prints p50/p99 of each, p99's ratio to the direct node's and to eRPC's, and the extra upstream calls (calls sent
 * to the nodes beyond the clients' calls, from each server's /metrics). Then the response cache: autocannon on eth_getBlockByHash
 * of one block (answered from the cache after the first call) through the gateway, beside a bare node:http server
 * answering a constant (bench/bareHttp.ts): the rate ratio; the head block (not yet final) and a finalized one, and
 * the same through eRPC with an in-memory cache of finalized answers. Bounded: CALLS calls per row, a few seconds of cache load.
 *
 *   npm run bench:latency -- [calls=2000] [clients=8]
 */
import { loadavg, cpus } from "node:os";
import autocannon from "autocannon";
import { startDevnet } from "../src/devnet/devnet.js";
import { spawnGatewayProcess, spawnListening } from "./gatewayProcess.js";
import { mineUntilFinalized } from "./peers/chainForPeers.js";
import { PEERS, notBuiltReason } from "./peers/peers.js";
import { cpuSeconds } from "./processUsage.js";
import { startPeer } from "./peers/startPeer.js";
import type { RunningPeer } from "./peers/startPeer.js";

/** Calls per row: p99 is the 20th-worst of 2,000 (the 6th of 600 moved by hundreds of ms from run to run). */
const CALLS = Number(process.argv[2] ?? 2_000);
const CLIENTS = Number(process.argv[3] ?? 8);
const CACHE_SECONDS = 5;
/**
 * The n-th call: each with its own calldata, so no server can merge identical calls in flight into one (eRPC does),
 * which would measure that merging rather than how slow nodes are routed around.
 */
const call = (n: number) => ({
  jsonrpc: "2.0",
  id: n,
  method: "eth_call",
  params: [
    { to: "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266", data: `0x${n.toString(16).padStart(8, "0")}` },
    "latest",
  ],
});

const [load1, load5] = loadavg().map((l) => l.toFixed(2));
console.log(`machine before the run: load average ${load1} / ${load5} (1 / 5 min) on ${cpus().length} cores`);

const devnet = await startDevnet({
  networks: [{ name: "bench", chainId: 31_337, lightNodes: 3 }],
  blockTimeMs: 0,
  latencyFronts: true,
});
const gateways: Array<{ stop(): Promise<void> }> = [];
const erpcPeer = PEERS.find((p) => p.name === "erpc")!;
let erpc: RunningPeer | undefined;
try {
  const lights = devnet.nodes("bench").filter((n) => n.role === "light");
  // A finalized block above 0, for the cache's finalized row (and as eRPC's state poller expects of a chain).
  await mineUntilFinalized(() => devnet.mine("bench"), lights[0]!.httpUrl);
  for (const [i, node] of lights.entries())
    await devnet.fault(node.name, { kind: "slow", profile: "light", seed: 1_000 + i });

  /** A JSON-RPC call's parsed answer. */
  const post = async (url: string, body: unknown): Promise<unknown> =>
    (
      await fetch(url, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      })
    ).json();

  /** CALLS eth_calls from CLIENTS clients in a closed loop; latencies in ms, and errors. */
  const run = async (url: string) => {
    const latencies: number[] = [];
    let errors = 0;
    let next = 0;
    await Promise.all(
      Array.from({ length: CLIENTS }, async () => {
        while (next < CALLS) {
          const body = JSON.stringify(call(next++));
          const started = performance.now();
          const answer = (await fetch(url, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body,
          })
            .then((r) => r.json())
            .catch(() => ({ error: "transport" }))) as { error?: unknown };
          latencies.push(performance.now() - started);
          if (answer.error !== undefined) errors++;
        }
      }),
    );
    latencies.sort((a, b) => a - b);
    const q = (p: number) => latencies[Math.ceil(p * latencies.length) - 1]!;
    return { p50: q(0.5), p99: q(0.99), errors };
  };

  /** The sum of a Prometheus counter's series at `url` whose line has every one of `having` in it. */
  const counter = async (url: string, name: string, ...having: string[]) => {
    const text = await (await fetch(url)).text();
    let sum = 0;
    for (const line of text.split("\n"))
      if (
        (line.startsWith(`${name}{`) || line.startsWith(`${name} `)) &&
        having.every((h) => line.includes(h))
      )
        sum += Number(line.split(" ").pop());
    return sum;
  };
  /** Calls the gateway sent to nodes, from its /metrics. */
  const upstreamCalls = (adminUrl: string) =>
    counter(`${adminUrl}/metrics`, "lightfleet_gateway_upstream_requests_total");
  /** eth_call attempts eRPC sent to the nodes, hedges included, from its /metrics. */
  const erpcCalls = (metricsUrl: string) =>
    counter(metricsUrl, "erpc_upstream_request_total", 'category="eth_call"');
  /** Cache hits and lookups so far, from each server's own metrics. */
  const cacheCounts = async (server: "gateway" | "eRPC") => {
    if (server === "gateway") {
      const url = `${cacheGateway.adminUrl}/metrics`;
      const name = "lightfleet_gateway_cache_requests_total";
      const hits = await counter(url, name, 'result="hit"');
      return { hits, lookups: hits + (await counter(url, name, 'result="miss"')) };
    }
    const url = erpc!.metricsUrl!;
    const hits = await counter(url, "erpc_cache_get_success_hit_total");
    return {
      hits,
      lookups:
        hits +
        (await counter(url, "erpc_cache_get_success_miss_total")) +
        (await counter(url, "erpc_cache_get_skipped_total")) +
        (await counter(url, "erpc_cache_get_error_total")),
    };
  };

  const rows: string[] = [];
  /** Prints a row and keeps it for the summary at the end. */
  const print = (row: string) => {
    rows.push(row);
    console.log(row);
  };
  const direct = await run(lights[0]!.httpUrl);
  /** eRPC's p99, once measured: the other rows are compared with it too. */
  let erpcP99: number | undefined;
  const line = (name: string, r: { p50: number; p99: number; errors: number }, extra: string) =>
    print(
      `| ${name} | ${r.p50.toFixed(0)} ms | ${r.p99.toFixed(0)} ms | ${(r.p99 / direct.p99).toFixed(2)}x | ` +
        `${erpcP99 === undefined ? "-" : `${(r.p99 / erpcP99).toFixed(2)}x`} | ${extra} | ${r.errors} |`,
    );
  console.log(`${CALLS} eth_call from ${CLIENTS} clients, every node slow (light: p50 50 ms, p99 2 s)`);
  console.log("| path | p50 | p99 | p99 / one node's | p99 / eRPC's | extra upstream calls | errors |");
  console.log("|---|---|---|---|---|---|---|");
  line("one slow node directly", direct, "-");
  /**
   * One row through a server in front of the nodes: the closed loop against `url`, and the calls it sent to the
   * nodes beyond the clients' own (`sent`: its count of upstream calls so far). Returns the result and those extra
   * calls.
   */
  const row = async (name: string, url: string, sent: () => Promise<number>) => {
    const before = await sent();
    const result = await run(url);
    const extra = (await sent()) - before - CALLS;
    line(name, result, `${extra} (${((100 * extra) / CALLS).toFixed(1)}%)`);
    return { result, extra };
  };

  // eRPC first: its extra calls are the budget of the gateway's last row. Its hedge policy: after the recent p90,
  // 20 ms to 1 s, one hedge; its extra calls from its own count of eth_call attempts.
  let erpcExtra: number | undefined;
  const erpcAbsent = notBuiltReason(erpcPeer);
  if (erpcAbsent) print(`| erpc | ${erpcAbsent} | | | | | |`);
  else {
    erpc = await startPeer(erpcPeer, {
      chainId: 31_337,
      upstreams: lights,
      hedge: { quantile: 0.9, minDelay: "20ms", maxDelay: "1s" },
      cache: true,
      metrics: true,
    });
    const metricsUrl = erpc.metricsUrl!;
    const measured = await row("eRPC over 3 slow nodes, hedge at p90 (no budget)", erpc.httpUrl, () =>
      erpcCalls(metricsUrl),
    );
    erpcP99 = measured.result.p99;
    erpcExtra = measured.extra;
  }

  const upstreams = lights.map((n) => ({ name: n.name, http: n.httpUrl, ws: n.wsUrl }));
  /** A fresh gateway over the three nodes with these hedge settings: its row, and the gateway (still running). */
  const gatewayRow = async (name: string, hedge: Record<string, unknown>) => {
    const gateway = await spawnGatewayProcess({
      workers: 1,
      policy: "rr",
      httpUrl: lights[0]!.httpUrl,
      wsUrl: lights[0]!.wsUrl,
      settings: {},
      networkGateway: { upstreams, hedge },
    });
    gateways.push(gateway);
    await row(name, gateway.url, () => upstreamCalls(gateway.adminUrl));
    return gateway;
  };
  await (await gatewayRow("gateway over 3 slow nodes, hedging off", { enabled: false })).stop();
  const cacheGateway = await gatewayRow("gateway over 3 slow nodes, hedging on (defaults, budget 0.1)", {
    enabled: true,
  });
  if (erpcExtra !== undefined) {
    // eRPC has no hedge budget: the gateway given as many extra calls as eRPC made, for p99 at one budget.
    const budget = Math.min(1, Math.max(0.01, Math.round((1_000 * erpcExtra) / CALLS) / 1_000));
    await (
      await gatewayRow(`gateway over 3 slow nodes, hedging on, budget ${budget} (eRPC's extra calls)`, {
        enabled: true,
        budget,
      })
    ).stop();
  }

  // The cache: one block by hash, asked again and again: the head (a hash the nodes' recent chains hold, checked at
  // each hit) and the devnet's finalized block (cached by both without any check against the chain).
  const blockByNumber = async (tag: string) =>
    (
      (await post(lights[0]!.httpUrl, {
        jsonrpc: "2.0",
        id: 1,
        method: "eth_getBlockByNumber",
        params: [tag, false],
      })) as { result: { hash: string; number: string } }
    ).result;
  const byHash = (hash: string) =>
    JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_getBlockByHash", params: [hash, false] });
  const head = await blockByNumber("latest");
  const finalized = await blockByNumber("finalized");
  /** Requests/s of autocannon against `url`, and the server's CPU per call (from /proc: steadier on a busy machine). */
  const rate = async (url: string, pid: number, body: string) => {
    const cpuBefore = cpuSeconds(pid);
    const result = await autocannon({
      url,
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
      connections: 16,
      duration: CACHE_SECONDS,
    });
    return {
      perSecond: result.requests.average,
      cpuMicros: ((cpuSeconds(pid) - cpuBefore) / Math.max(1, result.requests.total)) * 1e6,
    };
  };
  // Bare node:http servers: one answering a constant eth_blockNumber, one the finalized block's own bytes (as much to
  // write as a cache hit).
  const bares = [
    { name: "bare node:http (eth_blockNumber)", server: await spawnListening("bareHttp.ts") },
    {
      name: "bare node:http (the same block)",
      server: await spawnListening("bareHttp.ts", [JSON.stringify(finalized)]),
    },
  ];
  try {
    const baselines = [];
    for (const { name, server } of bares) {
      const measured = await rate(server.url, server.pid, byHash(finalized.hash));
      baselines.push({ name, ...measured });
      print(
        `cache baseline: ${name} ${measured.perSecond.toFixed(0)}/s, ${measured.cpuMicros.toFixed(1)} us CPU/call`,
      );
    }
    const servers: Array<["gateway" | "eRPC", string, number]> = [
      ["gateway", cacheGateway.url, cacheGateway.pid],
    ];
    if (erpc) servers.push(["eRPC", erpc.httpUrl, erpc.pid]);
    for (const [which, hash] of [
      ["the head block", head.hash],
      [`finalized block ${Number(finalized.number)}`, finalized.hash],
    ] as const)
      for (const [name, url, pid] of servers) {
        const before = await cacheCounts(name);
        const cached = await rate(url, pid, byHash(hash));
        const after = await cacheCounts(name);
        const hits = `${after.hits - before.hits} hits of ${after.lookups - before.lookups} lookups`;
        const ratios = baselines
          .map((b) => `${(cached.perSecond / b.perSecond).toFixed(2)}x ${b.name}`)
          .join(", ");
        print(
          `cache: eth_getBlockByHash of ${which} through ${name} ${cached.perSecond.toFixed(0)}/s, ` +
            `${cached.cpuMicros.toFixed(1)} us CPU/call (${hits}): ${ratios}`,
        );
      }
  } finally {
    await Promise.all(bares.map((b) => b.server.stop()));
  }
  console.log(`\n${rows.join("\n")}`);
} finally {
  await Promise.allSettled([...gateways.map((g) => g.stop()), erpc?.stop()]);
  await devnet.stop();
}
