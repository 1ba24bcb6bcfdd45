/**
 * The gateway against the same anvil light node, in one run, beside every peer that can run here:
 *
 * - HTTP: requests/s, p50/p99 latency and the server's CPU per call (from /proc, which the machine's other load
 *   disturbs far less than requests/s) of eth_blockNumber (answered from the served head) and eth_getBlockByNumber
 *   (forwarded), called directly, through nginx as a plain reverse proxy (when Debian's nginx is installed), through
 *   proxyd and eRPC (Go-built by hand, bench/peers/peers.ts says where the bench finds them; otherwise the row says
 *   why not and how to get them), and
 *   through `lightfleet gateway` as a process of its own, with one process and with 2 workers (node:cluster) under
 *   each of node:cluster's scheduling policies. For eth_blockNumber also a bare node:http server answering a constant
 *   (bench/bareHttp.ts, a process of its own): the most any node:http server does here; and the same bare server as
 *   2 node:cluster workers, whose CPU per call against its one process (`CPU/call /x1`) is what the machine charges
 *   for splitting the calls over two processes, beside the gateway workers' own `/x1`.
 * - WebSocket fan-out: N clients (in child processes) subscribed to newHeads through each server; the time from the
 *   node announcing a block (a direct subscription to the node, in the same child process) to each client receiving
 *   it, p50/p99, at 1,000 and 5,000 subscribers, and the server's resident memory per subscriber. Also through a
 *   bare `ws` server forwarding the node's notifications (bench/bareWsFanOut.ts): the least any Node fan-out takes.
 * - 20,000 subscribers through the gateway: p99, memory per subscriber, and that every subscriber got every block,
 *   the clients spread over several loopback source addresses and processes (the open-file limit is per process).
 *
 * Each server's CPU with no calls at all (its own polling) is measured first and printed beside it: it is in its
 * CPU per call too. Prints the machine's load before the run, each result as it comes, and at the end the run as one
 * markdown table (docs/performance.md keeps one per run). Bounded: a few seconds per HTTP run, a few blocks per fan-out
 * size.
 *
 *   npm run bench:gateway -- [seconds=5] [connections=16] [redis|http|workers]
 *
 * With `http`: every server, HTTP only (no WebSocket fan-out).
 *
 * With `fan-out`: the WebSocket fan-out at 1,000 and 5,000 subscribers only, through the bare `ws` server and the
 * gateways (no HTTP, no peers, no 20,000): the few minutes its goal is judged by.
 * With `workers`: only the bare node:http server and the gateway, each as one process and as 2 workers (round robin),
 * HTTP only, ROUNDS times each in turn, with the median of each workers row's CPU per call against its one process's:
 * the gateway's split against the machine's.
 *
 * With `one-core`: one core each, as a machine with a core per process would run them (bench/cpuPinning.ts): the bare
 * node:http server, nginx, the peers (GOMAXPROCS=1) and the gateway as one process, each pinned to the last core,
 * while the bench, its load generator and the node share the others; HTTP only, ROUNDS times each in turn, with the
 * median of the gateway's ratios to each of them and of its CPU per call. Each run says how busy the load side's cores
 * were: near 100%, the load side and not the server bounds that row's rate.
 *
 * With `redis`: only the gateway with in-process state and the gateway with its state in Redis, HTTP only, ROUNDS
 * times each in turn (the machine's other load shifts between runs), with the ratio of their CPU per call.
 *
 * Every gateway runs with the image's node flags (src/process/serviceNodeFlags.ts). With
 * LIGHTFLEET_BENCH_GATEWAY_NODE_FLAGS set, one more one-process gateway runs with those flags in their place (`none`:
 * node's defaults), in every mode: a flag measured against the shipped ones in the same run.
 */
import { execFileSync, spawn } from "node:child_process";
import type { ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { connect } from "node:net";
import { join } from "node:path";
import autocannon from "autocannon";
import { Redis } from "ioredis";
import { startDevnet } from "../src/devnet/devnet.js";
import { freePort } from "../src/process/freePort.js";
import { spawnGatewayProcess, spawnListening, WARM_UP_SECONDS } from "./gatewayProcess.js";
import { mineUntilFinalized } from "./peers/chainForPeers.js";
import { PEERS, notBuiltReason } from "./peers/peers.js";
import { startPeer } from "./peers/startPeer.js";
import { loadBusy, loadSideCpuSeconds, pinServer, startOneCore } from "./cpuPinning.js";
import { cpuSeconds, residentBytes, settledMemory } from "./processUsage.js";
import { startSubscribers, type Subscribers } from "./subscriberProcess.js";

const SECONDS = Number(process.argv[2] ?? 5);
const CONNECTIONS = Number(process.argv[3] ?? 16);
/** Only the two gateways whose state differs (in process, Redis), compared round after round. */
const REDIS_ONLY = process.argv[4] === "redis";
/** Every server, HTTP calls only (no fan-out): a few minutes shorter. */
const HTTP_ONLY = process.argv[4] === "http";
/** The fan-out at 1,000 and 5,000 through the bare server and the gateways only. */
const FAN_OUT_ONLY = process.argv[4] === "fan-out";
/** Only the bare server and the gateway, one process and workers each, compared round after round. */
const WORKERS_ONLY = process.argv[4] === "workers";
/** Each one-process server pinned to a core of its own, the load on the others, compared round after round. */
const ONE_CORE = process.argv[4] === "one-core";
/** Servers beside the gateway and the bare server: anvil, nginx, the peers, the gateway with Redis. */
const OTHERS = !REDIS_ONLY && !WORKERS_ONLY;
/** Rows that take more than the one-process servers: anvil's own, workers, Redis, the fan-out. */
const ALL_ROWS = OTHERS && !ONE_CORE;
/**
 * Node's flags for a second one-process gateway row, in place of the image's (src/process/serviceNodeFlags.ts): a
 * flag under test, or `none` for node's defaults. Unset: no such row.
 */
const VARIANT_FLAGS = process.env.LIGHTFLEET_BENCH_GATEWAY_NODE_FLAGS;
const GATEWAY_NODE_FLAGS =
  VARIANT_FLAGS === undefined ? undefined : VARIANT_FLAGS.split(" ").filter((f) => f !== "" && f !== "none");
const ROUNDS = REDIS_ONLY ? 5 : WORKERS_ONLY || ONE_CORE ? 3 : 1;
const FAN_OUT_SIZES = [1_000, 5_000];
const LARGE_FAN_OUT = 20_000;
const FAN_OUT_BLOCKS = 5;
const WORKERS = 2;
/** Subscribers per client process: well under the usual 20,000 open files a process may have here. */
const CLIENTS_PER_PROCESS = 10_000;
const CHAIN_ID = 31_337;

const [load1, load5, load15] = loadavg().map((l) => l.toFixed(2));
const loadLine = `load average ${load1} / ${load5} / ${load15} (1 / 5 / 15 min) on ${cpus().length} cores`;
console.log(`machine before the run: ${loadLine}`);
if (ONE_CORE) {
  // Before anything starts: the node and every server inherit the load cores until a server is moved to its own.
  startOneCore();
  // The Go peers on one core, as the gateway's one process: their runtime reads it at start.
  process.env.GOMAXPROCS = "1";
}

const devnet = await startDevnet({
  networks: [{ name: "bench", chainId: CHAIN_ID, lightNodes: 1 }],
  blockTimeMs: 0,
});
const light = devnet.nodes("bench").find((n) => n.role === "light")!;
for (let i = 0; i < 5; i++) await devnet.mine("bench");
// proxyd serves nothing until the node has a finalized block (bench/peers/chainForPeers.ts).
const mined = await mineUntilFinalized(() => devnet.mine("bench"), light.httpUrl);
console.log(`chain: ${5 + mined} blocks mined, so the node has safe and finalized blocks above 0`);
const anvilPid = devnet.status().nodes.find((n) => n.name === light.name)?.pid;

/** Something the load is sent to: its HTTP and WebSocket URLs and, when known, its process (for CPU and memory). */
interface Target {
  name: string;
  httpUrl: string;
  wsUrl?: string;
  pid?: number;
  /** The process serving its WebSocket, when not the same one. */
  wsPid?: number;
  /**
   * Its WebSocket process reports its memory after a full garbage collection (bench/memoryProbe.mjs); otherwise its
   * memory is resident memory as it stands.
   */
  settles?: boolean;
  /** Why it has no WebSocket, for its fan-out cells. */
  noWebSocket?: string;
  /** The gateway's own rows, which get the ratios. */
  gateway?: boolean;
  /**
   * A row of N workers: the name of the one-process row of the same server, whose CPU per call its own is set against
   * (`CPU/call /x1`).
   */
  workersOf?: string;
  /** Commands its Redis has processed so far (the gateway with its state in Redis). */
  redisCommands?: () => Promise<number>;
  stop?: () => Promise<void> | void;
}

/** The bare node:http (and ws) server's row. */
const BARE = "bare node:http / ws";
const targets: Target[] = [
  { name: "anvil directly", httpUrl: light.httpUrl, wsUrl: light.wsUrl, pid: anvilPid },
];
/** Why a peer is not in the run. */
const absent = new Map<string, string>();

/** Debian's nginx as a plain keep-alive reverse proxy to the node, or undefined when it is not installed. */
async function startNginx(upstream: string): Promise<Target | undefined> {
  const binary = ["/usr/sbin/nginx", "/usr/bin/nginx"].find((p) => existsSync(p));
  if (!binary) return undefined;
  const prefix = mkdtempSync(join(tmpdir(), "bench-nginx-"));
  const port = await freePort();
  const target = new URL(upstream);
  writeFileSync(
    join(prefix, "nginx.conf"),
    `worker_processes 1; daemon off; pid ${prefix}/nginx.pid; error_log ${prefix}/error.log;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path ${prefix}/body; proxy_temp_path ${prefix}/proxy;
  fastcgi_temp_path ${prefix}/fastcgi; uwsgi_temp_path ${prefix}/uwsgi; scgi_temp_path ${prefix}/scgi;
  upstream node { server ${target.host}; keepalive 64; }
  server {
    listen 127.0.0.1:${port};
    location / { proxy_pass http://node; proxy_http_version 1.1; proxy_set_header Connection ""; }
  }
}
`,
  );
  const child: ChildProcess = spawn(binary, ["-p", prefix, "-c", join(prefix, "nginx.conf")], {
    stdio: "ignore",
  });
  const url = `http://127.0.0.1:${port}/`;
  for (let i = 0; i < 100; i++) {
    const ok = await fetch(url, {
      method: "POST",
      body: "{}",
      headers: { "content-type": "application/json" },
    })
      .then(() => true)
      .catch(() => false);
    if (ok) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    name: "nginx",
    httpUrl: url,
    pid: child.pid,
    stop: () => {
      child.kill("SIGTERM");
      rmSync(prefix, { recursive: true, force: true });
    },
  };
}

if (!ALL_ROWS) targets.length = 0;
const nginx = OTHERS && !FAN_OUT_ONLY ? await startNginx(light.httpUrl) : undefined;
if (nginx) targets.push(nginx);
else if (OTHERS && !FAN_OUT_ONLY) absent.set("nginx", "not installed (apt-get install nginx)");
if (!REDIS_ONLY) {
  // The ceilings: what Node itself does here with no gateway code at all.
  const bareHttp = await spawnListening("bareHttp.ts");
  const bareWs = await spawnListening("bareWsFanOut.ts", [light.wsUrl]);
  targets.push({
    name: BARE,
    httpUrl: bareHttp.url,
    wsUrl: bareWs.url,
    pid: bareHttp.pid,
    wsPid: bareWs.pid,
    settles: true,
    stop: async () => {
      await bareHttp.stop();
      await bareWs.stop();
    },
  });
  // The same bare server as node:cluster workers: what splitting the calls over processes costs on these cores with
  // no gateway code, beside what it costs the gateway's workers.
  if (!FAN_OUT_ONLY && !ONE_CORE) {
    const bareCluster = await spawnListening("bareHttp.ts", [`--workers=${WORKERS}`]);
    targets.push({
      name: `bare node:http x${WORKERS}`,
      httpUrl: bareCluster.url,
      pid: bareCluster.pid,
      workersOf: BARE,
      stop: () => bareCluster.stop(),
    });
  }
  for (const pin of OTHERS && !FAN_OUT_ONLY ? PEERS : []) {
    const reason = notBuiltReason(pin);
    if (reason) {
      absent.set(pin.name, reason);
      continue;
    }
    try {
      const peer = await startPeer(pin, { chainId: CHAIN_ID, upstreams: [light] });
      targets.push({ name: pin.name, ...peer });
    } catch (error) {
      absent.set(pin.name, `did not start: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
}
for (const [name, reason] of absent) console.log(`${name}: not in this run, ${reason}`);
// Every gateway is `lightfleet gateway` as a process of its own, as it runs in production: one process, and two
// workers under each of node:cluster's scheduling policies.
for (const [name, workers, policy, nodeFlags] of [
  ["gateway x1", 1, "none"],
  // A second one-process gateway run by node with other flags, for a same-run comparison (the flags of the row).
  ...(GATEWAY_NODE_FLAGS === undefined
    ? []
    : ([
        [`gateway x1 node ${GATEWAY_NODE_FLAGS.join(" ") || "defaults"}`, 1, "none", GATEWAY_NODE_FLAGS],
      ] as const)),
  ...(REDIS_ONLY || ONE_CORE
    ? []
    : ([
        [`gateway x${WORKERS} rr`, WORKERS, "rr"],
        ...(WORKERS_ONLY ? [] : ([[`gateway x${WORKERS} none`, WORKERS, "none"]] as const)),
      ] as const)),
] as const) {
  const g = await spawnGatewayProcess({ workers, policy, ...light, nodeFlags });
  targets.push({
    name,
    httpUrl: `${g.url}/`,
    wsUrl: `${g.url.replace("http", "ws")}/ws`,
    pid: g.pid,
    gateway: true,
    ...(workers > 1 ? { workersOf: "gateway x1" } : {}),
    settles: true,
    stop: g.stop,
  });
}

// The gateway with its state in Redis (gateway.sharedState), when Debian's redis-server is installed. HTTP only: a
// WebSocket holds no shared state.
const redis = (ALL_ROWS && !FAN_OUT_ONLY) || REDIS_ONLY ? await startRedis() : undefined;
if (redis) {
  const redisClient = new Redis(redis.url);
  const g = await spawnGatewayProcess({
    workers: 1,
    policy: "none",
    ...light,
    settings: { sharedState: { backend: "redis", url: redis.url } },
  });
  targets.push({
    name: "gateway x1 redis",
    httpUrl: `${g.url}/`,
    redisCommands: async () => {
      const stats = await redisClient.info("stats");
      // Less this INFO itself.
      return Number(/total_commands_processed:(\d+)/.exec(stats)?.[1] ?? NaN) - 1;
    },
    pid: g.pid,
    gateway: true,
    stop: async () => {
      await g.stop();
      redisClient.disconnect();
      redis.stop();
    },
  });
} else if ((ALL_ROWS && !FAN_OUT_ONLY) || REDIS_ONLY)
  absent.set("gateway x1 redis", "redis-server is not installed (apt-get install redis-server)");
if (ONE_CORE) for (const target of targets) if (target.pid !== undefined) pinServer(target.pid);

/** A redis-server on a free loopback port, nothing on disk; undefined without the binary. */
async function startRedis(): Promise<{ url: string; stop: () => void } | undefined> {
  if (!existsSync("/usr/bin/redis-server")) return undefined;
  const port = await freePort();
  const child = spawn(
    "/usr/bin/redis-server",
    ["--port", String(port), "--bind", "127.0.0.1", "--save", ""],
    {
      stdio: "ignore",
    },
  );
  for (let i = 0; i < 100 && !(await accepting(port)); i++) await new Promise((r) => setTimeout(r, 50));
  return { url: `redis://127.0.0.1:${port}`, stop: () => child.kill("SIGKILL") };
}

function accepting(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

interface Run {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  /** CPU microseconds the server (and its workers) spent per call; NaN when its process is not known. */
  cpuPerCall: number;
  /** The same less the server's idle CPU over the run (its own polling): what the calls themselves cost. */
  callCpuPerCall: number;
  /** Redis commands per call (the gateway with its state in Redis): a measure the machine's load does not move. */
  redisPerCall?: number;
  /** With `one-core`: how busy the load side (the bench, its load generator, the node) kept its cores, 0-1. */
  loadBusy?: number;
}

/** The bare server answers a constant, so it is a ceiling only for the call answered from the served head. */
const serves = (target: Target, call: string) =>
  !target.name.startsWith("bare") || call === "eth_blockNumber";

/** `seconds` of one call through a server, from CONNECTIONS keep-alive connections. */
function load(target: Target, body: unknown, seconds: number) {
  return autocannon({
    url: target.httpUrl,
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
    connections: CONNECTIONS,
    duration: seconds,
    // The load generator runs in its own thread, so it does not share the gateway's event loop.
    workers: 1,
  });
}

async function run(target: Target, body: unknown): Promise<Run> {
  const cpuBefore = target.pid === undefined ? NaN : cpuSeconds(target.pid);
  const loadBefore = ONE_CORE ? loadSideCpuSeconds(anvilPid) : NaN;
  const started = performance.now();
  const redisBefore = await target.redisCommands?.();
  const result = await load(target, body, SECONDS);
  const cpuAfter = target.pid === undefined ? NaN : cpuSeconds(target.pid);
  const redisAfter = await target.redisCommands?.();
  return {
    ...(redisBefore === undefined || redisAfter === undefined
      ? {}
      : { redisPerCall: (redisAfter - redisBefore) / Math.max(1, result.requests.total) }),
    ...(ONE_CORE
      ? {
          loadBusy: loadBusy(loadSideCpuSeconds(anvilPid) - loadBefore, (performance.now() - started) / 1000),
        }
      : {}),
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors + result.non2xx,
    cpuPerCall: ((cpuAfter - cpuBefore) / Math.max(1, result.requests.total)) * 1e6,
    callCpuPerCall:
      ((cpuAfter -
        cpuBefore -
        ((idle.get(target.name) ?? NaN) / 1000) * ((performance.now() - started) / 1000)) /
        Math.max(1, result.requests.total)) *
      1e6,
  };
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
}

interface FanOut {
  /**
   * The median over the blocks of each block's first arrival at a subscriber: how long the server takes to start
   * sending a block it has just learned of (the rest of p99 is sending to every subscriber and their reading).
   */
  first: number;
  p50: number;
  p99: number;
  delivered: number;
  expected: number;
  /**
   * Growth of the server's resident memory (all its processes) per subscriber, once all are subscribed; both readings
   * after full garbage collections where the server allows (Target.settles).
   */
  bytesPerSubscriber: number;
  /** Growth of the JavaScript heap and buffers per subscriber, where the server settles; else NaN. */
  heapPerSubscriber: number;
}

/** The server's memory: after full garbage collections where it allows, else resident memory as it stands. */
async function memoryOf(target: Target): Promise<{ rss: number; heap: number }> {
  const pid = target.wsPid ?? target.pid;
  if (pid === undefined) return { rss: NaN, heap: NaN };
  return target.settles ? settledMemory(pid) : { rss: residentBytes(pid), heap: NaN };
}

/**
 * Delivery latency of newHeads to `size` subscribers of `target` (in child processes), from the moment each process
 * gets the node's own announcement over a direct subscription (epoch ms, sub-millisecond).
 */
async function fanOut(target: Target, size: number): Promise<FanOut> {
  const memoryBefore = await memoryOf(target);
  // Bounded: connecting is a few milliseconds per subscriber at worst on a loaded machine.
  const deadline = Date.now() + 60_000 + size * 10;
  const processes = Math.ceil(size / CLIENTS_PER_PROCESS);
  const clients: Subscribers[] = [];
  try {
    for (let p = 0; p < processes; p++)
      clients.push(
        await startSubscribers(
          target.wsUrl!,
          Math.min(CLIENTS_PER_PROCESS, size - p * CLIENTS_PER_PROCESS),
          light.wsUrl,
          deadline,
        ),
      );
    const memoryAfter = await memoryOf(target);
    for (let b = 0; b < FAN_OUT_BLOCKS; b++) {
      await devnet.mine("bench");
      // Every subscriber receives the block before the next one; one that never does is counted as lost (bounded).
      const blockDeadline = Date.now() + 10_000 + size;
      while (clients.some((c) => c.complete() <= b) && Date.now() < blockDeadline)
        await new Promise((r) => setTimeout(r, 20));
    }
    const latencies: number[] = [];
    /** Each block's first arrival at any subscriber, by hash: when the server began sending it. */
    const firsts = new Map<string, number>();
    for (const c of clients) {
      const { announced, arrivals } = await c.finish();
      for (const [hash, times] of Object.entries(arrivals)) {
        const at = announced[hash];
        if (at === undefined) continue;
        for (const t of times) {
          latencies.push(t - at);
          firsts.set(hash, Math.min(firsts.get(hash) ?? Infinity, t - at));
        }
      }
    }
    const sorted = latencies.sort((a, b) => a - b);
    return {
      first: percentile(
        [...firsts.values()].sort((a, b) => a - b),
        50,
      ),
      p50: percentile(sorted, 50),
      p99: percentile(sorted, 99),
      delivered: sorted.length,
      expected: size * FAN_OUT_BLOCKS,
      bytesPerSubscriber: (memoryAfter.rss - memoryBefore.rss) / size,
      heapPerSubscriber: (memoryAfter.heap - memoryBefore.heap) / size,
    };
  } finally {
    for (const c of clients) c.kill();
  }
}

const calls = {
  eth_blockNumber: { jsonrpc: "2.0", id: 1, method: "eth_blockNumber", params: [] },
  eth_getBlockByNumber: { jsonrpc: "2.0", id: 1, method: "eth_getBlockByNumber", params: ["0x3", false] },
};
const fixed = (n: number, digits = 0) => (Number.isFinite(n) ? n.toFixed(digits) : "-");
const thousands = (n: number) => (Number.isFinite(n) ? Math.round(n).toLocaleString("en-US") : "-");
const fmt = (r: Run) =>
  `${fixed(r.rps).padStart(6)} req/s p50 ${String(r.p50).padStart(3)} ms p99 ${String(r.p99).padStart(3)} ms ` +
  `${fixed(r.cpuPerCall, 1).padStart(5)} us CPU/call (${fixed(r.callCpuPerCall, 1)} less idle)` +
  (r.redisPerCall === undefined ? "" : `, ${r.redisPerCall.toFixed(3)} Redis commands/call`) +
  (r.loadBusy === undefined ? "" : `, load side ${(r.loadBusy * 100).toFixed(0)}% busy`) +
  (r.errors > 0 ? `, ${r.errors} errors` : "");
/**
 * The gateway's ratio of requests/s to each other server's of the same call; for the gateway with its state in Redis,
 * its CPU per call against the gateway's with state in process; for a row of workers, its CPU per call against its
 * one-process row's.
 */
const ratios = (target: Target, r: Run, others: Map<string, Run>) => {
  const inProcess = others.get("gateway x1");
  const one = target.workersOf === undefined ? undefined : others.get(target.workersOf);
  return [
    ...(target.gateway
      ? [...others]
          .filter(
            ([name]) => !name.startsWith("gateway") && !targets.some((t) => t.name === name && t.workersOf),
          )
          .map(([name, o]) => `/${name.split(" ")[0]} ${(r.rps / o.rps).toFixed(2)}x`)
      : []),
    ...(r !== inProcess && inProcess && others.get("gateway x1 redis") === r
      ? [
          `CPU/call /in-process ${(r.cpuPerCall / inProcess.cpuPerCall).toFixed(2)}x ` +
            `(less idle ${(r.callCpuPerCall / inProcess.callCpuPerCall).toFixed(2)}x)`,
        ]
      : []),
    // How workers scale where the machine's cores cannot show it in rates (the load generator and the node share
    // them): N workers on N free cores serve N times one process's rate when each call costs them what it costs one.
    // The bare server's workers row says what the machine charges for the split with no gateway code in it.
    ...(one
      ? [
          `CPU/call /x1 ${(r.cpuPerCall / one.cpuPerCall).toFixed(2)}x ` +
            `(less idle ${(r.callCpuPerCall / one.callCpuPerCall).toFixed(2)}x)`,
        ]
      : []),
  ].join(", ");
};

/** The ratios as `format` puts them, or nothing for a row with none. */
const withRatios = (text: string, format: (text: string) => string) => (text ? format(text) : "");

/**
 * For each round of `call` (modes of several rounds), what `pick` reads from that round's runs, sorted; rounds where
 * it reads nothing are left out.
 */
const overRounds = (call: string, pick: (results: Map<string, Run>) => number | undefined) =>
  [...http]
    .filter(([key]) => key.startsWith(`${call} `))
    .flatMap(([, results]) => {
      const value = pick(results);
      return value === undefined || !Number.isFinite(value) ? [] : [value];
    })
    .sort((a, b) => a - b);
const median = (sorted: number[]) => sorted[Math.floor(sorted.length / 2)] ?? NaN;
const errorText = (error: unknown) => (error instanceof Error ? error.message : String(error));
const http = new Map<string, Map<string, Run>>();
const fanOuts = new Map<number, Map<string, FanOut | string>>();
/** CPU milliseconds per second each server spends with no calls (its own polling); in its CPU per call too. */
const idle = new Map<string, number>();
try {
  const IDLE_SECONDS = 3;
  const idleBefore = targets.map((t) => (t.pid === undefined ? NaN : cpuSeconds(t.pid)));
  await new Promise((r) => setTimeout(r, IDLE_SECONDS * 1000));
  targets.forEach((t, i) => {
    if (t.pid !== undefined) idle.set(t.name, ((cpuSeconds(t.pid) - idleBefore[i]!) / IDLE_SECONDS) * 1000);
  });
  console.log(
    `idle CPU (ms per second): ${[...idle].map(([name, ms]) => `${name} ${ms.toFixed(0)}`).join(", ")}`,
  );
  console.log(`HTTP: ${CONNECTIONS} connections, ${SECONDS} s per run, same anvil node behind each`);
  if (!FAN_OUT_ONLY) {
    // Unmeasured first: V8 compiles and recompiles a server's call path over its first few hundred thousand calls
    // (the gateway's forwarding settles after about 20 s of load, by --trace-opt), on threads whose CPU a measured
    // run would count. A server in production runs for days; every server here gets the same warm-up.
    console.log(`  warming up: ${WARM_UP_SECONDS} s of each call through each server, not measured`);
    for (const [call, body] of Object.entries(calls))
      for (const target of targets) if (serves(target, call)) await load(target, body, WARM_UP_SECONDS);
  }
  for (let round = 1; round <= (FAN_OUT_ONLY ? 0 : ROUNDS); round++)
    for (const [call, body] of Object.entries(calls)) {
      const key = ROUNDS > 1 ? `${call} (round ${round})` : call;
      const results = new Map<string, Run>();
      http.set(key, results);
      console.log(`  ${key}`);
      // Each round in the other order: the machine's load drifts, and the first of two runs is not favoured.
      for (const target of round % 2 === 0 ? [...targets].reverse() : targets) {
        if (!serves(target, call)) continue;
        const r = await run(target, body);
        results.set(target.name, r);
        console.log(
          `    ${target.name.padEnd(19)} ${fmt(r)}${withRatios(ratios(target, r, results), (text) => ` | ${text}`)}`,
        );
      }
    }
  // Modes of several rounds: medians over the rounds, each round's runs taken close together.
  if (REDIS_ONLY)
    // The Redis gateway's CPU per call against the in-process one's.
    for (const call of Object.keys(calls)) {
      const ratio = (pick: (r: Run) => number) =>
        fixed(
          median(
            overRounds(
              call,
              (results) => pick(results.get("gateway x1 redis")!) / pick(results.get("gateway x1")!),
            ),
          ),
          2,
        );
      console.log(
        `${call}: CPU per call with Redis / in process, median of ${ROUNDS} rounds: ${ratio((r) => r.cpuPerCall)}x ` +
          `(less idle CPU: ${ratio((r) => r.callCpuPerCall)}x)`,
      );
    }

  if (WORKERS_ONLY)
    // Each workers row's CPU per call against its one process's.
    for (const call of Object.keys(calls))
      for (const many of targets.filter((t) => t.workersOf !== undefined)) {
        const ratiosOf = (pick: (r: Run) => number) =>
          overRounds(call, (results) => {
            const [r, one] = [results.get(many.name), results.get(many.workersOf!)];
            return r && one ? pick(r) / pick(one) : undefined;
          });
        const all = ratiosOf((r) => r.cpuPerCall);
        if (all.length === 0) continue;
        console.log(
          `${call}, ${many.name}: CPU per call /x1, median of ${all.length} rounds: ${fixed(median(all), 2)}x ` +
            `(rounds ${all.map((r) => r.toFixed(2)).join(", ")}; less idle CPU: ${fixed(median(ratiosOf((r) => r.callCpuPerCall)), 2)}x)`,
        );
      }

  if (ONE_CORE)
    // The gateway's CPU per call, and its rate against each other server's.
    for (const call of Object.keys(calls))
      for (const one of targets.filter((t) => t.gateway && t.workersOf === undefined)) {
        const gateway = (results: Map<string, Run>) => results.get(one.name);
        const cpu = overRounds(call, (results) => gateway(results)?.cpuPerCall);
        const against = targets
          .filter((t) => !t.gateway)
          .flatMap((other) => {
            const all = overRounds(call, (results) => {
              const [g, o] = [gateway(results), results.get(other.name)];
              return g && o ? g.rps / o.rps : undefined;
            });
            return all.length === 0
              ? []
              : [
                  `/${other.name.split(" ")[0]} ${fixed(median(all), 2)}x (${all.map((r) => r.toFixed(2)).join(", ")})`,
                ];
          });
        console.log(
          `${call}, ${one.name}, one core each, median of ${cpu.length} rounds: ${fixed(median(cpu), 1)} us CPU/call; ` +
            `rate ${against.join(", ")}`,
        );
      }

  if (ALL_ROWS && !HTTP_ONLY) {
    console.log(
      `WebSocket newHeads fan-out (${FAN_OUT_BLOCKS} blocks each, from the node's own announcement):`,
    );
    const row = (name: string, size: number, r: FanOut) =>
      `  ${String(size).padStart(6)} subscribers, ${name.padEnd(19)}: first ${r.first.toFixed(1)} ms p50 ` +
      `${r.p50.toFixed(1)} ms p99 ` +
      `${r.p99.toFixed(1)} ms, ${(r.bytesPerSubscriber / 1024).toFixed(1)} KiB/subscriber ` +
      (Number.isFinite(r.heapPerSubscriber) ? `(heap ${(r.heapPerSubscriber / 1024).toFixed(1)} KiB) ` : "") +
      `(${r.delivered}/${r.expected} delivered)`;
    for (const size of FAN_OUT_SIZES) {
      const results = new Map<string, FanOut | string>();
      fanOuts.set(size, results);
      for (const target of targets.filter((t) => (t.wsUrl || t.noWebSocket) && t.name !== "anvil directly")) {
        const r = target.noWebSocket ?? (await fanOut(target, size).catch(errorText));
        results.set(target.name, r);
        const bare = results.get("bare node:http / ws");
        if (typeof r === "string")
          console.log(`  ${String(size).padStart(6)} subscribers, ${target.name}: ${r}`);
        else
          console.log(
            row(target.name, size, r) +
              (target.gateway && bare && typeof bare !== "string"
                ? ` | /bare p99 ${(r.p99 / bare.p99).toFixed(2)}x`
                : ""),
          );
      }
    }
    if (!FAN_OUT_ONLY) {
      // 20,000, through a gateway started for it (so its memory before is an idle gateway's, not the garbage of earlier
      // runs): one process when the open-file limit lets one process hold them all, else two workers (round robin, so
      // each holds half).
      const hardLimit = Number(execFileSync("sh", ["-c", "ulimit -Hn"], { encoding: "utf8" }).trim());
      const oneProcess = hardLimit > LARGE_FAN_OUT + 1_000;
      const name = oneProcess ? "gateway x1" : `gateway x${WORKERS} rr`;
      console.log(
        `  (open files per process here: at most ${hardLimit}; ${LARGE_FAN_OUT} subscribers through ${name})`,
      );
      const fresh = await spawnGatewayProcess({
        workers: oneProcess ? 1 : WORKERS,
        policy: oneProcess ? "none" : "rr",
        ...light,
      });
      try {
        const r = await fanOut(
          {
            name,
            httpUrl: fresh.url,
            wsUrl: `${fresh.url.replace("http", "ws")}/ws`,
            pid: fresh.pid,
            gateway: true,
            settles: true,
          },
          LARGE_FAN_OUT,
        ).catch(errorText);
        fanOuts.set(LARGE_FAN_OUT, new Map([[name, r]]));
        console.log(
          typeof r === "string"
            ? `  ${LARGE_FAN_OUT} subscribers, ${name}: ${r}`
            : row(name, LARGE_FAN_OUT, r),
        );
      } finally {
        await fresh.stop();
      }
    }
  }
  console.log(`\n${markdown()}`);
} finally {
  for (const target of targets) await target.stop?.();
  await devnet.stop();
}

/** The run as one markdown table: every server beside the gateway, the gateway rows with their ratios. */
function markdown(): string {
  const sizes = [...fanOuts.keys()];
  const header = [
    `server (${loadLine} before the run; ${SECONDS} s x ${CONNECTIONS} connections)`,
    ...[...http.keys()].map((c) => `\`${c}\` req/s, p99, CPU/call`),
    ...sizes.map((s) => `fan-out p99 / mem at ${s.toLocaleString("en-US")}`),
  ];
  const lines = [`| ${header.join(" | ")} |`, `|${header.map(() => "---").join("|")}|`];
  for (const target of targets) {
    const idleMs = idle.get(target.name);
    const cells = [
      idleMs === undefined ? target.name : `${target.name} (idle ${idleMs.toFixed(0)} ms CPU/s)`,
    ];
    for (const results of http.values()) {
      const r = results.get(target.name);
      if (!r) {
        cells.push("");
        continue;
      }
      const base = `${thousands(r.rps)}, ${r.p99} ms, ${fixed(r.cpuPerCall, 1)} us`;
      cells.push(base + withRatios(ratios(target, r, results), (text) => ` (${text})`));
    }
    for (const size of sizes) {
      const r = fanOuts.get(size)!.get(target.name);
      const bare = fanOuts.get(size)!.get("bare node:http / ws");
      if (r === undefined) cells.push("");
      else if (typeof r === "string") cells.push(r);
      else
        cells.push(
          `${r.p99.toFixed(0)} ms / ${(r.bytesPerSubscriber / 1024).toFixed(1)} KiB` +
            (Number.isFinite(r.heapPerSubscriber)
              ? ` (heap ${(r.heapPerSubscriber / 1024).toFixed(1)} KiB)`
              : "") +
            (target.gateway && bare && typeof bare !== "string"
              ? ` (${(r.p99 / bare.p99).toFixed(2)}x bare)`
              : "") +
            (r.delivered !== r.expected ? `, ${r.delivered}/${r.expected} delivered` : ""),
        );
    }
    lines.push(`| ${cells.join(" | ")} |`);
  }
  for (const [name, reason] of absent) lines.push(`| ${name} | ${reason} |${" |".repeat(header.length - 2)}`);
  return lines.join("\n");
}
