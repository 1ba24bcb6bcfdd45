/**
 * Instructions a server's process executes per call, counted by valgrind's callgrind: a measure the machine's other
 * load does not move at all (unlike requests/s, and CPU time less so). Three calls through the gateway, each beside
 * the bare node:http server (bench/bareHttp.ts) that bounds it, so the ratio comes out of one run:
 *
 * - eth_blockNumber (answered from the served head), against the bare server answering a constant eth_blockNumber;
 * - a cache hit, eth_getBlockByHash of a finalized block, against the bare server writing that block's bytes;
 * - a forwarded eth_getBlockByNumber of a block above the finalized one (never cached), with no bare counterpart.
 *
 * Every server runs compiled (tsc, as the image runs the gateway) under callgrind; the gateway is in front of one
 * anvil node. Each call is sent WARMUP times (so V8 has compiled the path: after 1,000 calls under valgrind much of
 * node:http still ran as baseline code, and the counts were a third higher), the counters are zeroed, the call is sent
 * CALLS times over a few keep-alive connections, and the counters are dumped. Between the two, rounds of 500 calls
 * (at most 8) until V8's background threads (TurboFan compiling) ran under 2% of the main thread's count in a round:
 * a path that changed what it writes (a cache hit after eth_blockNumber) deoptimizes node:http's write code, and under
 * valgrind its recompilation could still be running through the counted calls. The gateway polls its head every 10 s,
 * not every 100 ms as in bench:gateway (under valgrind a poll costs as much as hundreds of calls). A count in which a
 * major collection fell (by chance: about 120k instructions on every call of that count) is taken again, and again
 * while V8 compiles after it, at most four times; minor collections are in every count. What each process
 * does with no calls over as long is counted the same way and taken off. Printed for the main thread (the
 * JavaScript, node:http and libuv: the steady figure) and for all threads (V8 compiling and collecting garbage in
 * the background too, which moves with when the compiler kicks in). "bare/gateway" is the bare server's main-thread
 * count over the gateway's: the rate ratio if the instructions were all a call cost. Counts user-space instructions
 * only: the kernel's work on the sockets (the same for both) is not in them, so the rate ratio is nearer 1 than this.
 * Takes a few minutes (valgrind runs node ~50x slower). With a directory, each call's callgrind dump is kept there
 * (read it with callgrind_annotate).
 *
 * With `--workers=N`: instead, the same calls (eth_blockNumber to the bare server and to the gateway, and the forwarded
 * eth_getBlockByNumber) through one process and through N node:cluster workers of the same server (round robin, as
 * `gateway.workers` runs; every process of a server under callgrind with --trace-children), summed over the primary
 * and the workers, each process warmed up with as many calls as the single one: whether a worker executes more per
 * call than one process does. A worker's count above one process's is code (IPC, polls, smaller writes); equal counts
 * leave the machine (more processes on the same cores) as the cause of a higher CPU time per call.
 *
 *   npm run bench:call-instructions -- [calls=2000] [directory] [--workers=N]
 */
import { execFileSync } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Agent, request } from "undici";
import { startDevnet } from "../src/devnet/devnet.js";
import { callgrindTotals, callsInto, majorGcInstructions } from "./callgrindTotals.js";
import type { CallgrindTotals } from "./callgrindTotals.js";
import { compileForBench, spawnGatewayProcess, spawnListening } from "./gatewayProcess.js";
import type { ChildServer } from "./gatewayProcess.js";
import { mineUntilFinalized } from "./peers/chainForPeers.js";
import { processTree } from "./processUsage.js";
import { expectSameAnswer } from "./sameAnswer.js";

const WORKERS_FLAG = "--workers=";
const WORKERS = Number(process.argv.find((a) => a.startsWith(WORKERS_FLAG))?.slice(WORKERS_FLAG.length) ?? 1);
const [callsArg, KEEP] = process.argv.slice(2).filter((a) => !a.startsWith("--"));
const CALLS = Number(callsArg ?? 2_000);
const WARMUP = 5_000;
/** Then rounds of this many calls until the background threads ran under 2% of the main thread's count. */
const SETTLE_CALLS = 500;
const SETTLE_ROUNDS = 8;
const SETTLED = 0.02;
const CONNECTIONS = 4;
const READY_TIMEOUT_MS = 600_000;

const dir = mkdtempSync(join(tmpdir(), "bench-callgrind-"));
/**
 * valgrind under callgrind, its dumps in a directory of the server's own, one file per process (node:cluster's workers
 * are children of the server's process, followed by --trace-children).
 */
const callgrind = (name: string) => {
  mkdirSync(join(dir, name));
  return [
    "valgrind",
    "--tool=callgrind",
    "--trace-children=yes",
    `--callgrind-out-file=${join(dir, name)}/callgrind.out.%p`,
    "--dump-instr=no",
  ];
};

const compiled = compileForBench();
const devnet = await startDevnet({
  networks: [{ name: "bench", chainId: 31_337, lightNodes: 1 }],
  blockTimeMs: 0,
});
const agent = new Agent({ connections: CONNECTIONS, pipelining: 1 });
const stops: Array<() => Promise<void>> = [];
/** A count whose major collection took more than this share of the main thread is taken again, at most this often. */
const MAJOR_GC_SHARE = 0.05;
const MAJOR_GC_RECOUNTS = 4;

/** One call sent to one server: counted, and set against another row's count when `against` names it. */
/** A body made anew for each call from the call's number. */
class Changing {
  constructor(readonly call: (n: number) => unknown) {}
}
const changing = (call: (n: number) => unknown) => new Changing(call);

interface Row {
  name: string;
  server: ChildServer;
  dumps: string;
  /** The call, or the call to send as the n-th (a body that changes from call to call). */
  body: unknown;
  against?: string;
  /** The server's workers (a row of node:cluster workers, set against one process). */
  workers?: number;
  /** Run first. */
  before?: () => Promise<void>;
}
try {
  const light = devnet.nodes("bench").find((n) => n.role === "light")!;
  // A finalized block above 0 (anvil's trails its head by 64 blocks) for the cache hit; a block above it to forward.
  await mineUntilFinalized(() => devnet.mine("bench"), light.httpUrl);
  const nodeCall = async (method: string, params: unknown[]) => {
    const response = await request(light.httpUrl, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
    });
    return ((await response.body.json()) as { result: Record<string, string> }).result;
  };
  const finalized = await nodeCall("eth_getBlockByNumber", ["finalized", false]);
  const head = await nodeCall("eth_getBlockByNumber", ["latest", false]);
  // The block before the finalized one: a second final block, for hits that change from call to call.
  const beforeFinalized = await nodeCall("eth_getBlockByNumber", [
    `0x${(BigInt(finalized.number!) - 1n).toString(16)}`,
    false,
  ]);

  /** A gateway under callgrind with `workers` processes (1: one process, no cluster). */
  const startGateway = async (workers: number, dumps: string) => {
    const server = await spawnGatewayProcess({
      workers,
      policy: workers > 1 ? "rr" : "none",
      ...light,
      compiled,
      settings: { headPollInterval: "10s" },
      wrapper: callgrind(dumps),
      readyTimeoutMs: READY_TIMEOUT_MS,
    });
    stops.push(() => server.stop());
    return server;
  };
  /** The bare node:http server under callgrind, answering `result` (eth_blockNumber's by default). */
  const startBare = async (dumps: string, args: string[] = []) => {
    const server = await spawnListening("bareHttp.ts", args, compiled, {
      wrapper: callgrind(dumps),
      readyTimeoutMs: READY_TIMEOUT_MS,
    });
    stops.push(() => server.stop());
    return server;
  };

  const rpc = (method: string, params: unknown[]) => ({ jsonrpc: "2.0", id: 1, method, params });
  const blockNumber = rpc("eth_blockNumber", []);
  const forwarded = rpc("eth_getBlockByNumber", [head.number, false]);
  const rows: Row[] = [];
  if (WORKERS > 1) {
    // One process and N workers of each server, each call through both, one after the other.
    const [bare, bareWorkers] = [
      await startBare("bare"),
      await startBare("bareWorkers", [`--workers=${WORKERS}`]),
    ];
    const [gateway, gatewayWorkers] = [
      await startGateway(1, "gateway"),
      await startGateway(WORKERS, "gatewayWorkers"),
    ];
    const pair = (name: string, one: ChildServer, many: ChildServer, dumps: string, body: unknown) => [
      { name: `${name} x1`, server: one, dumps, body },
      {
        name: `${name} x${WORKERS}`,
        server: many,
        dumps: `${dumps}Workers`,
        body,
        against: `${name} x1`,
        workers: WORKERS,
      },
    ];
    rows.push(
      ...pair("bare eth_blockNumber", bare, bareWorkers, "bare", blockNumber),
      ...pair("eth_blockNumber", gateway, gatewayWorkers, "gateway", blockNumber),
      ...pair("eth_getBlockByNumber", gateway, gatewayWorkers, "gateway", forwarded),
    );
  } else {
    const gateway = await startGateway(1, "gateway");
    const bare = await startBare("bare");
    const bareBlock = await startBare("bareBlock", [JSON.stringify(finalized)]);
    const hit = rpc("eth_getBlockByHash", [finalized.hash, false]);
    /**
     * The cache hit and its bare counterpart write the same bytes with the same headers, or the rows compare nothing.
     * Checked just before the bare block's row: a bare server that answered and then sat idle while other rows were
     * counted had node's nextTick turn to its slow path (18 fields through the runtime per call, see above), which the
     * gateway guards against and a bare server does not.
     */
    const checkSameAnswer = async () => {
      const bytes = await expectSameAnswer(`${gateway.url}/`, `${bareBlock.url}/`, hit);
      console.log(`  cache hit and bare block: the same answer, ${bytes} bytes, the same headers`);
    };
    rows.push(
      { name: "bare eth_blockNumber", server: bare, dumps: "bare", body: blockNumber },
      {
        name: "bare block",
        server: bareBlock,
        dumps: "bareBlock",
        body: hit,
        before: checkSameAnswer,
      },
      {
        name: "eth_blockNumber",
        server: gateway,
        dumps: "gateway",
        body: blockNumber,
        against: "bare eth_blockNumber",
      },
      {
        name: "cache hit, finalized",
        server: gateway,
        dumps: "gateway",
        body: hit,
        against: "bare block",
      },
      {
        // What a shared gateway sees more often than one call repeated: every call a new id (as client libraries
        // number them) and two final blocks asked for in turn, so no answer is the one just written.
        name: "hit, ids changing",
        server: gateway,
        dumps: "gateway",
        body: changing((n) => ({
          jsonrpc: "2.0",
          id: n,
          method: "eth_getBlockByHash",
          params: [n % 2 === 0 ? finalized.hash : beforeFinalized.hash, false],
        })),
        against: "bare block",
      },
      { name: "eth_getBlockByNumber", server: gateway, dumps: "gateway", body: forwarded },
    );
  }

  /**
   * Instructions each process of a server (its primary first, then its workers) executed since its counters were last
   * zeroed, from a fresh dump's totals.
   */
  const dumpedInstructions = (
    server: ChildServer,
    dumps: string,
    keepAs?: string,
  ): Array<CallgrindTotals & { tickFieldsThroughRuntime: number; majorGc: number }> => {
    const at = join(dir, dumps);
    for (const f of readdirSync(at)) rmSync(join(at, f));
    const pids = processTree(server.pid);
    for (const pid of pids) execFileSync("callgrind_control", ["--dump", String(pid)], { stdio: "ignore" });
    return pids.map((pid) => {
      const file = join(
        at,
        readdirSync(at).find((f) => f.startsWith(`callgrind.out.${pid}.`))!,
      );
      if (KEEP && keepAs) {
        mkdirSync(KEEP, { recursive: true });
        copyFileSync(file, join(KEEP, `${keepAs}-${pid}.callgrind`));
      }
      return {
        ...callgrindTotals(file),
        tickFieldsThroughRuntime: callsInto(file, "Runtime_DefineKeyedOwnPropertyInLiteral"),
        majorGc: majorGcInstructions(file),
      };
    });
  };
  const zero = (server: ChildServer) => {
    for (const pid of processTree(server.pid))
      execFileSync("callgrind_control", ["--zero", String(pid)], { stdio: "ignore" });
  };
  /**
   * One call on the kept connections. The bench blocks its own event loop while callgrind dumps (seconds on a loaded
   * machine), so a connection the server closed as idle meanwhile can still look open when the next calls go out:
   * a call reset that way is sent again on a new connection (at most twice), as any HTTP client retries a request a
   * closing keep-alive connection took.
   */
  const post = async (url: string, payload: string) => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await request(url, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: payload,
          dispatcher: agent,
        });
      } catch (error) {
        const code = (error as { code?: string }).code;
        if (attempt > 2 || (code !== "ECONNRESET" && code !== "UND_ERR_SOCKET")) throw error;
      }
    }
  };
  const send = async (url: string, body: unknown, count: number) => {
    const fixed = body instanceof Changing ? undefined : JSON.stringify(body);
    let next = 0;
    await Promise.all(
      Array.from({ length: CONNECTIONS }, async () => {
        while (next++ < count) {
          const response = await post(url, fixed ?? JSON.stringify((body as Changing).call(next)));
          const answer = (await response.body.json()) as { result?: unknown };
          if (answer.result === undefined) throw new Error(`no result: ${JSON.stringify(answer)}`);
        }
      }),
    );
  };

  console.log(`servers under callgrind; ${CALLS} calls each after ${WARMUP} per process to warm up`);
  const mainPerCall = new Map<string, number>();
  const perCall = (n: number) => Math.round(n).toLocaleString("en-US");
  const sum = (counts: number[]) => counts.reduce((a, b) => a + b, 0);
  for (const row of rows) {
    const url = `${row.server.url}/`;
    await row.before?.();
    await send(url, row.body, WARMUP * (row.workers ?? 1));
    // Until V8 has done compiling the path: counted calls that run alongside TurboFan (the background threads' work)
    // still run code not optimized yet (baseline, or deoptimized by a new kind of answer), work a warm server does not do.
    let settle = 0;
    for (; settle < SETTLE_ROUNDS; settle++) {
      zero(row.server);
      await send(url, row.body, SETTLE_CALLS * (row.workers ?? 1));
      const probe = dumpedInstructions(row.server, row.dumps);
      const main = sum(probe.map((p) => p.main));
      if (sum(probe.map((p) => p.all)) - main < SETTLED * main) break;
    }
    // A major collection falls in a count of CALLS calls or not, by chance (one put 120k instructions on every call
    // of a row): a count with one is taken again (and again while V8 compiles after it), at most MAJOR_GC_RECOUNTS
    // times. Minor collections stay in every count.
    let elapsed = 0;
    let busy: ReturnType<typeof dumpedInstructions> = [];
    let recounts = 0;
    for (; ; recounts++) {
      zero(row.server);
      const started = performance.now();
      await send(url, row.body, CALLS);
      elapsed = performance.now() - started;
      busy = dumpedInstructions(row.server, row.dumps, row.name.replaceAll(/\W+/g, "-"));
      const main = sum(busy.map((b) => b.main));
      const major = sum(busy.map((b) => b.majorGc)) >= MAJOR_GC_SHARE * main;
      // After a major collection V8 may compile the path again: a count taken again must be settled too.
      const compiling = recounts > 0 && sum(busy.map((b) => b.all)) - main >= SETTLED * main;
      if (recounts === MAJOR_GC_RECOUNTS || (!major && !compiling)) break;
    }
    zero(row.server);
    await new Promise((r) => setTimeout(r, elapsed));
    const idle = dumpedInstructions(row.server, row.dumps);
    // Per process (the primary, then each worker) and summed: what a call cost the server as a whole.
    const mains = busy.map((b, i) => (b.main - (idle[i]?.main ?? 0)) / CALLS);
    const main = sum(mains);
    mainPerCall.set(row.name, main);
    const base = row.against === undefined ? undefined : mainPerCall.get(row.against);
    console.log(
      `  ${row.name.padEnd(21)} main thread ${perCall(main)} instructions/call ` +
        (mains.length > 1
          ? `(primary ${perCall(mains[0]!)}, workers ${mains.slice(1).map(perCall).join(" + ")}) `
          : "") +
        `(${perCall(sum(busy.map((b) => b.main)) / CALLS)} with idle work); all threads ` +
        `${perCall((sum(busy.map((b) => b.all)) - sum(idle.map((b) => b.all))) / CALLS)} ` +
        `(${perCall(sum(busy.map((b) => b.all)) / CALLS)}); ${(elapsed / 1000).toFixed(1)} s; ${settle} settling rounds` +
        (recounts > 0 ? `; counted again ${recounts}x after a major collection` : "") +
        (base === undefined
          ? ""
          : row.workers === undefined
            ? `; bare/gateway ${(base / main).toFixed(2)}`
            : `; x${row.workers}/x1 ${(main / base).toFixed(3)}`) +
        // node's nextTick on its slow path (docs/performance.md): about 18 per request when on, none when off.
        `; nextTick fields through the runtime ${(sum(busy.map((b) => b.tickFieldsThroughRuntime)) / CALLS).toFixed(1)}/call`,
    );
  }
} finally {
  for (const stop of stops.reverse()) await stop();
  await agent.close();
  await devnet.stop();
  rmSync(dir, { recursive: true, force: true });
}
