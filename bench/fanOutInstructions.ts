/**
 * Instructions the gateway's process and the bare `ws` fan-out server's (bench/bareWsFanOut.ts) execute to get one
 * newHeads notification to one subscriber, counted by valgrind's callgrind: a measure the machine's other load does
 * not move (bench:gateway's fan-out latencies move with it, as the subscribers share the cores with the server).
 *
 * Each server runs compiled (tsc) under callgrind in front of the same anvil node, its subscribers in a process of
 * their own (not counted). For each server and each of two subscriber counts (1 and N): WARMUP blocks are mined (V8
 * compiles the send loop), the counters are zeroed, BLOCKS blocks are mined one by one, each once every subscriber
 * has the one before, and the counters are dumped; then what the process does over as long with no block (pings,
 * polls) is counted the same way and taken off. What one subscriber costs is the difference between the two counts
 * over (N - 1) subscribers; what a block costs whatever the subscribers (reading the node's notification, agreeing
 * on the head, building the notification) is the count with one subscriber. Main thread only (JavaScript, libuv),
 * user-space instructions only: the kernel's work per socket write is not in them.
 *
 *   npm run bench:fan-out-instructions -- [subscribers=1000] [blocks=10]
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startDevnet } from "../src/devnet/devnet.js";
import { callgrindTotals } from "./callgrindTotals.js";
import { compileForBench, spawnGatewayProcess, spawnListening } from "./gatewayProcess.js";
import type { ChildServer } from "./gatewayProcess.js";
import { startSubscribers } from "./subscriberProcess.js";

const SUBSCRIBERS = Number(process.argv[2] ?? 1_000);
const BLOCKS = Number(process.argv[3] ?? 10);
const WARMUP = 10;
const READY_TIMEOUT_MS = 600_000;
if (!Number.isInteger(SUBSCRIBERS) || SUBSCRIBERS < 2 || !Number.isInteger(BLOCKS) || BLOCKS < 1)
  throw new Error("usage: bench:fan-out-instructions -- [subscribers >= 2] [blocks >= 1]");

const dir = mkdtempSync(join(tmpdir(), "bench-fan-out-callgrind-"));
const callgrind = (name: string) => {
  mkdirSync(join(dir, name));
  return ["valgrind", "--tool=callgrind", `--callgrind-out-file=${join(dir, name)}/callgrind.out`];
};

const compiled = compileForBench();
const devnet = await startDevnet({
  networks: [{ name: "bench", chainId: 31_337, lightNodes: 1 }],
  blockTimeMs: 0,
});
const stops: Array<() => Promise<void>> = [];
try {
  const light = devnet.nodes("bench").find((n) => n.role === "light")!;
  for (let i = 0; i < 3; i++) await devnet.mine("bench");
  const gateway = await spawnGatewayProcess({
    workers: 1,
    policy: "none",
    ...light,
    compiled,
    // Under valgrind a poll costs as much as many notifications: the head comes by newHeads, polls are seldom.
    settings: { headPollInterval: "10s" },
    wrapper: callgrind("gateway"),
    readyTimeoutMs: READY_TIMEOUT_MS,
  });
  stops.push(() => gateway.stop());
  const bare = await spawnListening("bareWsFanOut.ts", [light.wsUrl], compiled, {
    wrapper: callgrind("bare"),
    readyTimeoutMs: READY_TIMEOUT_MS,
  });
  stops.push(() => bare.stop());

  /** Main-thread instructions since the counters were last zeroed. */
  const dumped = (server: ChildServer, name: string): number => {
    const at = join(dir, name);
    for (const f of readdirSync(at)) rmSync(join(at, f));
    execFileSync("callgrind_control", ["--dump", String(server.pid)], { stdio: "ignore" });
    const file = readdirSync(at).find((f) => f.startsWith("callgrind.out"));
    return callgrindTotals(join(at, file!)).main;
  };
  const zero = (server: ChildServer) =>
    execFileSync("callgrind_control", ["--zero", String(server.pid)], { stdio: "ignore" });

  /** Main-thread instructions per block with `count` subscribers, less what as long a time with no block costs. */
  const perBlock = async (server: ChildServer, name: string, wsUrl: string, count: number) => {
    const subscribers = await startSubscribers(wsUrl, count, light.wsUrl, Date.now() + 600_000);
    try {
      let mined = 0;
      const mine = async (blocks: number) => {
        for (let b = 0; b < blocks; b++) {
          await devnet.mine("bench");
          mined++;
          const deadline = Date.now() + 120_000;
          while (subscribers.complete() < mined && Date.now() < deadline)
            await new Promise((r) => setTimeout(r, 20));
          if (subscribers.complete() < mined)
            throw new Error(`${name}: a block did not reach every subscriber`);
        }
      };
      await mine(WARMUP);
      zero(server);
      const started = performance.now();
      await mine(BLOCKS);
      const elapsed = performance.now() - started;
      const busy = dumped(server, name);
      zero(server);
      await new Promise((r) => setTimeout(r, elapsed));
      const idle = dumped(server, name);
      return { instructions: (busy - idle) / BLOCKS, seconds: elapsed / 1000 };
    } finally {
      subscribers.kill();
    }
  };

  const n = (value: number) => Math.round(value).toLocaleString("en-US");
  console.log(
    `servers under callgrind; ${BLOCKS} blocks after ${WARMUP}, with 1 and ${SUBSCRIBERS} subscribers`,
  );
  const perSubscriber = new Map<string, number>();
  for (const [name, server, wsUrl] of [
    ["bare", bare, bare.url],
    ["gateway", gateway, `${gateway.url.replace("http", "ws")}/ws`],
  ] as const) {
    const one = await perBlock(server, name, wsUrl, 1);
    const many = await perBlock(server, name, wsUrl, SUBSCRIBERS);
    const each = (many.instructions - one.instructions) / (SUBSCRIBERS - 1);
    perSubscriber.set(name, each);
    console.log(
      `  ${name.padEnd(8)} ${n(each)} instructions per notification per subscriber; ${n(one.instructions)} per ` +
        `block with one subscriber, ${n(many.instructions)} with ${SUBSCRIBERS} (${many.seconds.toFixed(1)} s)`,
    );
  }
  console.log(
    `  gateway/bare per subscriber: ${(perSubscriber.get("gateway")! / perSubscriber.get("bare")!).toFixed(2)}`,
  );
} finally {
  for (const stop of stops.reverse()) await stop();
  await devnet.stop();
  rmSync(dir, { recursive: true, force: true });
}
