/**
 * Instructions the gateway's process executes per call, counted by valgrind's callgrind: a measure the machine's
 * other load does not move at all (unlike requests/s, and CPU time less so), for eth_blockNumber (answered from the
 * served head) and a forwarded eth_getBlockByNumber. The gateway (dist/cli.js) runs under callgrind in front of one
 * anvil node; each call is sent WARMUP times (so V8 has compiled the path), the counters are zeroed, the call is sent
 * CALLS times over a few keep-alive connections, and the counters are dumped. The head is polled every 10 s, not
 * every 100 ms as in bench:gateway (under valgrind a poll costs as much as hundreds of calls); what the process does
 * with no calls over as long is counted the same way and taken off. Printed for the main thread (the JavaScript,
 * node:http and libuv: the steady figure) and for all threads (V8 compiling and collecting garbage in the background
 * too, which moves with when the compiler kicks in). Counts user-space instructions only: the
 * kernel's work on the sockets is not in them. Takes a few minutes (valgrind runs node ~50x slower). With a
 * directory, each call's callgrind dump is kept there (read it with callgrind_annotate).
 *
 *   npm run bench:call-instructions -- [calls=2000] [directory]
 */
import { execFileSync } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Agent, request } from "undici";
import { startDevnet } from "../src/devnet/devnet.js";
import { callgrindTotals } from "./callgrindTotals.js";
import type { CallgrindTotals } from "./callgrindTotals.js";
import { spawnGatewayProcess } from "./gatewayProcess.js";

const CALLS = Number(process.argv[2] ?? 2_000);
const KEEP = process.argv[3];
const WARMUP = 1_000;
const CONNECTIONS = 4;

const calls = {
  eth_blockNumber: { jsonrpc: "2.0", id: 1, method: "eth_blockNumber", params: [] },
  eth_getBlockByNumber: { jsonrpc: "2.0", id: 1, method: "eth_getBlockByNumber", params: ["0x3", false] },
};

const dir = mkdtempSync(join(tmpdir(), "bench-callgrind-"));
const devnet = await startDevnet({
  networks: [{ name: "bench", chainId: 31_337, lightNodes: 1 }],
  blockTimeMs: 0,
});
const agent = new Agent({ connections: CONNECTIONS, pipelining: 1 });
try {
  for (let i = 0; i < 5; i++) await devnet.mine("bench");
  const light = devnet.nodes("bench").find((n) => n.role === "light")!;
  const gateway = await spawnGatewayProcess({
    workers: 1,
    policy: "none",
    ...light,
    settings: { headPollInterval: "10s" },
    wrapper: ["valgrind", "--tool=callgrind", `--callgrind-out-file=${dir}/callgrind.out`, "--dump-instr=no"],
    readyTimeoutMs: 600_000,
  });
  /** Instructions executed since the last zeroing, from a fresh dump's totals. */
  const dumpedInstructions = (keepAs?: string): CallgrindTotals => {
    for (const f of readdirSync(dir)) rmSync(join(dir, f));
    execFileSync("callgrind_control", ["--dump", String(gateway.pid)], { stdio: "ignore" });
    const file = readdirSync(dir).find((f) => f.startsWith("callgrind.out"));
    if (KEEP && keepAs) {
      mkdirSync(KEEP, { recursive: true });
      copyFileSync(join(dir, file!), join(KEEP, keepAs));
    }
    return callgrindTotals(join(dir, file!));
  };
  const zero = () => execFileSync("callgrind_control", ["--zero", String(gateway.pid)], { stdio: "ignore" });
  const send = async (body: unknown, count: number) => {
    const text = JSON.stringify(body);
    let next = 0;
    await Promise.all(
      Array.from({ length: CONNECTIONS }, async () => {
        while (next++ < count) {
          const response = await request(`${gateway.url}/`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: text,
            dispatcher: agent,
          });
          const answer = (await response.body.json()) as { result?: unknown };
          if (answer.result === undefined) throw new Error(`no result: ${JSON.stringify(answer)}`);
        }
      }),
    );
  };
  try {
    console.log(
      `gateway under callgrind (pid ${gateway.pid}); ${CALLS} calls each after ${WARMUP} to warm up`,
    );
    for (const [name, body] of Object.entries(calls)) {
      await send(body, WARMUP);
      zero();
      const started = performance.now();
      await send(body, CALLS);
      const elapsed = performance.now() - started;
      const busy = dumpedInstructions(`${name}.callgrind`);
      zero();
      await new Promise((r) => setTimeout(r, elapsed));
      const idle = dumpedInstructions();
      const perCall = (n: number) => Math.round(n / CALLS).toLocaleString("en-US");
      console.log(
        `  ${name.padEnd(21)} main thread ${perCall(busy.main - idle.main)} instructions/call ` +
          `(${perCall(busy.main)} with idle work); all threads ${perCall(busy.all - idle.all)} ` +
          `(${perCall(busy.all)}); ${(elapsed / 1000).toFixed(1)} s`,
      );
    }
  } finally {
    await gateway.stop();
  }
} finally {
  await agent.close();
  await devnet.stop();
  rmSync(dir, { recursive: true, force: true });
}
