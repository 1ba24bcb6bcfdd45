/**
 * The gateway against the same anvil light node, in one run:
 *
 * - HTTP: requests/s and p50/p99 latency of eth_blockNumber (answered from the served head) and eth_getBlockByNumber
 *   (forwarded), called directly, through nginx as a plain reverse proxy (when Debian's nginx is installed), through
 *   `lightfleet gateway` as a process of its own, with one process and with 2 workers (node:cluster) under each of
 *   node:cluster's scheduling policies; ratios to direct, to nginx and to the one-process gateway.
 *   For eth_blockNumber also a bare node:http server answering a constant (bench/bareHttp.ts, a process of its own):
 *   the most any node:http server does here, with the gateway's ratio to it.
 * - WebSocket fan-out: N clients (in a child process) subscribed to newHeads through each gateway; the time from the
 *   node announcing a block (a direct subscription to the node, in that same child process) to each client receiving
 *   it, p50/p99, at 1,000 and 5,000 subscribers. Also through a bare `ws` server forwarding the node's notifications
 *   (bench/bareWsFanOut.ts, a process of its own): the least any Node fan-out takes here, with the gateway's p99 ratio
 *   to it.
 *
 * Bounded: a few seconds per HTTP run, a few blocks per fan-out size.
 *
 *   npm run bench:gateway -- [seconds=5] [connections=16]
 */
import { spawn } from "node:child_process";
import type { ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import autocannon from "autocannon";
import { startDevnet } from "../src/devnet/devnet.js";
import { freePort } from "../src/process/freePort.js";
import { spawnGatewayProcess, spawnListening } from "./gatewayProcess.js";

const SECONDS = Number(process.argv[2] ?? 5);
const CONNECTIONS = Number(process.argv[3] ?? 16);
const FAN_OUT_SIZES = [1_000, 5_000];
const FAN_OUT_BLOCKS = 5;
const WORKERS = 2;

const devnet = await startDevnet({
  networks: [{ name: "bench", chainId: 31_337, lightNodes: 1 }],
  blockTimeMs: 0,
});
for (let i = 0; i < 5; i++) await devnet.mine("bench");
const light = devnet.nodes("bench").find((n) => n.role === "light")!;
// Every gateway is `lightfleet gateway` as a process of its own, as it runs in production: one process, and two
// workers under each of node:cluster's scheduling policies.
const gateways = [
  { name: "x1", ...(await spawnGatewayProcess({ workers: 1, policy: "none", ...light })) },
  { name: `x${WORKERS} rr`, ...(await spawnGatewayProcess({ workers: WORKERS, policy: "rr", ...light })) },
  {
    name: `x${WORKERS} none`,
    ...(await spawnGatewayProcess({ workers: WORKERS, policy: "none", ...light })),
  },
];
// The ceilings: what Node itself does here with no gateway code at all.
const bareHttp = await spawnListening("bareHttp.ts");
const bareWs = await spawnListening("bareWsFanOut.ts", [light.wsUrl]);

interface Run {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
}

async function run(url: string, body: unknown): Promise<Run> {
  const result = await autocannon({
    url,
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
    connections: CONNECTIONS,
    duration: SECONDS,
    // The load generator runs in its own thread, so it does not share the gateway's event loop.
    workers: 1,
  });
  return {
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors + result.non2xx,
  };
}

/** Debian's nginx as a plain keep-alive reverse proxy to the node, or undefined when it is not installed. */
async function startNginx(upstream: string): Promise<{ url: string; stop: () => void } | undefined> {
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
    url,
    stop: () => {
      child.kill("SIGTERM");
      rmSync(prefix, { recursive: true, force: true });
    },
  };
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
}

/**
 * Delivery latency of newHeads to `size` gateway (or bare ws server) subscribers (in a child process), from the moment that process gets
 * the node's own announcement over a direct subscription (epoch ms, sub-millisecond).
 */
async function fanOut(
  gatewayUrl: string,
  size: number,
): Promise<{ p50: number; p99: number; delivered: number; expected: number }> {
  const child = spawn(
    process.execPath,
    [
      "--import",
      "tsx",
      join(import.meta.dirname, "gatewayFanOutClients.ts"),
      `${gatewayUrl.replace("http", "ws")}/ws`,
      String(size),
      light.wsUrl,
    ],
    // tsx is resolved from the package root, wherever the benchmark is started from.
    { stdio: ["pipe", "pipe", "inherit"], cwd: join(import.meta.dirname, "..") },
  );
  let output = "";
  child.stdout.on("data", (data: Buffer) => (output += String(data)));
  try {
    const deadline = Date.now() + 60_000;
    while (!output.includes("ready\n")) {
      if (Date.now() > deadline || child.exitCode !== null) throw new Error("fan-out clients did not start");
      await new Promise((r) => setTimeout(r, 20));
    }
    for (let b = 0; b < FAN_OUT_BLOCKS; b++) {
      await devnet.mine("bench");
      // Let every subscriber receive the block before the next one (bounded).
      await new Promise((r) => setTimeout(r, 500));
    }
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.stdin.write("done\n");
    await exited;
  } finally {
    child.kill();
  }
  const { announced, arrivals } = JSON.parse(output.slice(output.indexOf("ready\n") + 6)) as {
    announced: Record<string, number>;
    arrivals: Record<string, number[]>;
  };
  const latencies: number[] = [];
  for (const [hash, times] of Object.entries(arrivals)) {
    const at = announced[hash];
    if (at !== undefined) for (const t of times) latencies.push(t - at);
  }
  const sorted = latencies.sort((a, b) => a - b);
  return {
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    delivered: sorted.length,
    expected: size * FAN_OUT_BLOCKS,
  };
}

const calls = {
  eth_blockNumber: { jsonrpc: "2.0", id: 1, method: "eth_blockNumber", params: [] },
  eth_getBlockByNumber: { jsonrpc: "2.0", id: 1, method: "eth_getBlockByNumber", params: ["0x3", false] },
};
const nginx = await startNginx(light.httpUrl);
const ratios = (r: Run, direct: Run, nginx: Run | undefined, bare: Run | undefined) =>
  `/direct ${(r.rps / direct.rps).toFixed(2)}x` +
  (nginx ? `, /nginx ${(r.rps / nginx.rps).toFixed(2)}x` : "") +
  (bare ? `, /bare ${(r.rps / bare.rps).toFixed(2)}x` : "") +
  (r.errors > 0 ? `, ${r.errors} errors` : "");
const fmt = (r: Run) =>
  `${r.rps.toFixed(0).padStart(6)} req/s p50 ${String(r.p50).padStart(3)} ms p99 ${String(r.p99).padStart(3)} ms`;
try {
  console.log(`HTTP: ${CONNECTIONS} connections, ${SECONDS} s per run, same anvil node behind each`);
  if (!nginx) console.log("  (nginx not installed: apt-get install nginx for the reverse-proxy baseline)");
  for (const [name, body] of Object.entries(calls)) {
    const direct = await run(light.httpUrl, body);
    const proxied = nginx ? await run(nginx.url, body) : undefined;
    // The bare server answers a constant, so it is a ceiling only for the call answered from the served head.
    const bare = name === "eth_blockNumber" ? await run(bareHttp.url, body) : undefined;
    console.log(`  ${name}`);
    console.log(`    direct          ${fmt(direct)}`);
    if (proxied) console.log(`    nginx           ${fmt(proxied)}`);
    if (bare) console.log(`    bare node:http  ${fmt(bare)} | ${ratios(bare, direct, proxied, undefined)}`);
    let one: Run | undefined;
    for (const g of gateways) {
      const r = await run(`${g.url}/`, body);
      one ??= r;
      const perWorker = g === gateways[0] ? "" : `, /x1 ${(r.rps / one.rps).toFixed(2)}x`;
      console.log(
        `    gateway ${g.name.padEnd(7)} ${fmt(r)} | ${ratios(r, direct, proxied, bare)}${perWorker}`,
      );
    }
  }
  console.log(
    `WebSocket newHeads fan-out (${FAN_OUT_BLOCKS} blocks each, from the node's own announcement):`,
  );
  for (const size of FAN_OUT_SIZES) {
    const row = (name: string, r: Awaited<ReturnType<typeof fanOut>>) =>
      `  ${String(size).padStart(5)} subscribers, ${name.padEnd(15)}: ` +
      `p50 ${r.p50.toFixed(1)} ms p99 ${r.p99.toFixed(1)} ms (${r.delivered}/${r.expected} delivered)`;
    const bare = await fanOut(bareWs.url, size);
    console.log(row("bare ws", bare));
    for (const g of gateways) {
      const r = await fanOut(g.url, size);
      console.log(`${row(`gateway ${g.name}`, r)} | /bare p99 ${(r.p99 / bare.p99).toFixed(2)}x`);
    }
  }
} finally {
  nginx?.stop();
  await bareHttp.stop();
  await bareWs.stop();
  for (const g of gateways) await g.stop();
  await devnet.stop();
}
