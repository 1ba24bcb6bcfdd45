import type { ChildProcessWithoutNullStreams } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { Agent, request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import type { AnvilNode } from "../../src/devnet/anvil.js";
import { LOG_EMITTER_BYTECODE, LOG_EMITTER_TOPIC } from "../../src/devnet/devTransactions.js";
import { HttpRpcClient } from "../../src/rpc/httpRpcClient.js";
import { parseExposition } from "../../src/scaling/sources/parseExposition.js";
import { spawnGateway } from "../support/runCli.js";
import type { SpawnedGateway } from "../support/runCli.js";
import { waitFor } from "../support/waitFor.js";
import { startUpstreamNode, writeGatewayConfig } from "./support.js";

interface RpcAnswer {
  result?: unknown;
  error?: { code: number; message: string };
}

/** One call on a connection of its own (no keep-alive), so the cluster hands each call to the next worker. */
function callOnNewConnection(url: string, method: string, params: unknown[] = []): Promise<RpcAnswer> {
  const body = JSON.stringify({ jsonrpc: "2.0", id: 1, method, params });
  return new Promise((resolve, reject) => {
    const req = request(
      `${url}/`,
      { method: "POST", agent: false, headers: { "content-type": "application/json" } },
      (res) => {
        let text = "";
        res.on("data", (chunk: Buffer) => (text += chunk.toString()));
        res.on("end", () => resolve(JSON.parse(text) as RpcAnswer));
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

async function blockNumberOnNewConnection(url: string): Promise<string> {
  return (await callOnNewConnection(url, "eth_blockNumber")).result as string;
}

/** A POST on the agent's one kept-alive connection. */
function postOn(
  agent: Agent,
  url: string,
  body: unknown,
): Promise<{
  status: number;
  body: Array<{ result?: string; error?: { data?: { retryAfterMs?: number } } }>;
}> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${url}/`,
      { method: "POST", agent, headers: { "content-type": "application/json" } },
      (res) => {
        let text = "";
        res.on("data", (chunk: Buffer) => (text += chunk.toString()));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) as never }));
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(JSON.stringify(body));
  });
}

/** lightfleet_gateway_requests_total of the network, summed over the workers by the primary. */
async function requestsServed(gateway: SpawnedGateway): Promise<number> {
  const response = await fetch(`${gateway.admin}/metrics`);
  return parseExposition(await response.text())
    .filter((s) => s.name === "lightfleet_gateway_requests_total" && s.labels.network === "devnet")
    .reduce((sum, s) => sum + s.value, 0);
}

/** Pids of the workers that have said they listen, in order. */
/**
 * A worker's start is mostly module loading, which a loaded machine (two cores shared with the rest of the suite)
 * stretches to tens of seconds: the bound for a worker, first or replacement, to listen.
 */
const WORKER_START_MS = 45_000;

function workerPids(gateway: SpawnedGateway): number[] {
  return gateway
    .stdout()
    .split("\n")
    .filter((line) => line.includes("gateway worker listening"))
    .map((line) => (JSON.parse(line) as { pid: number }).pid);
}

describe("lightfleet gateway with workers: 2", () => {
  let node: AnvilNode;
  let dir: string;
  let file: string;
  const children: ChildProcessWithoutNullStreams[] = [];

  beforeAll(async () => {
    node = await startUpstreamNode();
    dir = mkdtempSync(join(tmpdir(), "lightfleet-gateway-workers-"));
    file = writeGatewayConfig(join(dir, "gateway.yaml"), {
      peer: node.httpUrl,
      network: { upstreams: [{ name: "upstream", http: node.httpUrl, ws: node.wsUrl }] },
      workers: 2,
    });
  });

  afterAll(async () => {
    for (const child of children) if (child.exitCode === null) child.kill("SIGKILL");
    await node?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  async function start(config = file): Promise<SpawnedGateway> {
    // Round robin (the default, named so the spread below does not depend on it): fresh connections alternate.
    const gateway = await spawnGateway(config, { NODE_CLUSTER_SCHED_POLICY: "rr" });
    children.push(gateway.child);
    await waitFor(async () => (await fetch(`${gateway.admin}/readyz`)).status === 200, {
      what: "every worker ready",
      timeoutMs: WORKER_START_MS,
    });
    return gateway;
  }

  it(
    "sums the workers' request counts on /metrics, keeps a dead worker's in the sum, and replaces it",
    async () => {
      const gateway = await start();
      const [first, second] = workerPids(gateway);
      expect(first).toBeDefined();
      expect(second).toBeDefined();
      expect(first).not.toBe(second);
      expect(first).not.toBe(gateway.child.pid);

      expect((await fetch(`${gateway.admin}/healthz`)).status).toBe(200);
      const calls = 20;
      for (let i = 0; i < calls; i++) expect(await blockNumberOnNewConnection(gateway.url)).toBe("0x3");
      expect(await requestsServed(gateway)).toBe(calls);

      process.kill(first!, "SIGKILL");
      const replacement = await waitFor(() => workerPids(gateway)[2], {
        what: "a replacement worker",
        timeoutMs: WORKER_START_MS,
      });
      expect([first, second]).not.toContain(replacement);
      await waitFor(async () => (await fetch(`${gateway.admin}/readyz`)).status === 200, {
        what: "ready again",
      });
      // The dead worker's counts stay in the sum at the values of the last scrape, which had them all: no drop for
      // rate() or the autoscaler to read as a reset.
      expect(await requestsServed(gateway)).toBe(calls);
      for (let i = 0; i < 10; i++) expect(await blockNumberOnNewConnection(gateway.url)).toBe("0x3");
      expect(await requestsServed(gateway)).toBe(calls + 10);
      expect(gateway.stdout()).toMatch(/gateway worker exited; starting a replacement/);

      const exited = new Promise<number | null>((resolve) => gateway.child.once("exit", resolve));
      gateway.child.kill("SIGTERM");
      expect(await exited).toBe(0);
    },
    3 * WORKER_START_MS,
  );

  it("keeps one rate limit per address over the workers: the whole burst on one connection, and shared", async () => {
    const limited = writeGatewayConfig(join(dir, "limited.yaml"), {
      peer: node.httpUrl,
      network: { upstreams: [{ name: "upstream", http: node.httpUrl, ws: node.wsUrl }] },
      workers: 2,
      // Next to no refill: what is spent stays spent for the length of the test.
      gateway: { rateLimit: { requestsPerSecond: 0.01, burst: 20 } },
    });
    const gateway = await start(limited);
    // Four kept-alive connections: round robin puts two on each worker.
    const agents = Array.from({ length: 4 }, () => new Agent({ keepAlive: true, maxSockets: 1 }));
    const batch = (size: number) =>
      Array.from({ length: size }, (_, id) => ({
        jsonrpc: "2.0",
        id,
        method: "eth_blockNumber",
        params: [],
      }));

    // One connection spends the whole burst at once (a rate split over the workers would have given it 10).
    const spent = await postOn(agents[0]!, gateway.url, batch(20));
    expect(spent.status).toBe(200);
    expect(spent.body.every((r) => r.result === "0x3")).toBe(true);
    // Every other connection, on either worker, soon finds the budget spent. A batch over the burst is refused
    // without taking anything, and says how long until the address could send it: 0 while its budget is full.
    for (const agent of agents.slice(1))
      await waitFor(
        async () =>
          ((await postOn(agent, gateway.url, batch(21))).body[0]?.error?.data?.retryAfterMs ?? 0) > 0,
        {
          what: "the spending known to every worker",
        },
      );
    for (const agent of agents) agent.destroy();
    gateway.child.kill("SIGTERM");
  });

  it("caps an address's WebSocket connections over all workers, not per worker", async () => {
    const capped = writeGatewayConfig(join(dir, "capped.yaml"), {
      peer: node.httpUrl,
      network: { upstreams: [{ name: "upstream", http: node.httpUrl, ws: node.wsUrl }] },
      workers: 2,
      gateway: { maxWsConnectionsPerAddress: 2 },
    });
    const gateway = await start(capped);
    const wsUrl = `${gateway.url.replace("http", "ws")}/ws`;
    /** Opens a WebSocket: the socket, or the HTTP status it was refused with. */
    const connect = () =>
      new Promise<WebSocket | number>((resolve, reject) => {
        const ws = new WebSocket(wsUrl);
        ws.once("open", () => resolve(ws));
        ws.once("unexpected-response", (_req, res) => resolve(res.statusCode ?? 0));
        ws.once("error", reject);
      });
    const first = await connect();
    const second = await connect();
    expect(first).toBeInstanceOf(WebSocket);
    expect(second).toBeInstanceOf(WebSocket);
    // Round robin put the two on different workers, and a third lands on one of them: each would allow it alone.
    expect(await connect()).toBe(429);
    (first as WebSocket).close();
    const again = await waitFor(
      async () => {
        const made = await connect();
        return made instanceof WebSocket ? made : undefined;
      },
      { what: "a connection once one closed" },
    );
    again.close();
    (second as WebSocket).close();
    gateway.child.kill("SIGTERM");
  });

  it("serves newHeads over WebSocket and on SIGTERM closes it with 1001 and exits 0", async () => {
    const gateway = await start();
    expect(gateway.stdout().match(/"msg":"gateway serving"/g)).toHaveLength(1);
    const ws = new WebSocket(`${gateway.url.replace("http", "ws")}/ws`);
    await new Promise((resolve, reject) => ws.once("open", resolve).once("error", reject));
    const messages: Array<{ id?: number; result?: string; params?: { result: { number: string } } }> = [];
    ws.on("message", (data: Buffer) => messages.push(JSON.parse(data.toString()) as (typeof messages)[0]));
    ws.send(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_subscribe", params: ["newHeads"] }));
    await waitFor(() => messages.find((m) => m.id === 1)?.result, { what: "a subscription id" });
    await new HttpRpcClient(node.httpUrl, 10_000).call("anvil_mine", ["0x1"]);
    const head = await waitFor(() => messages.find((m) => m.params)?.params?.result.number, {
      what: "a newHeads notification",
    });
    expect(Number(head)).toBeGreaterThan(3);

    const closed = new Promise<number>((resolve) => ws.once("close", resolve));
    const exited = new Promise<number | null>((resolve) => gateway.child.once("exit", resolve));
    gateway.child.kill("SIGTERM");
    expect(await closed).toBe(1001);
    expect(await exited).toBe(0);
    expect(workerPids(gateway).every((pid) => !isRunning(pid))).toBe(true);
  });

  describe("filters polled over fresh connections, which land on either worker", () => {
    const anvil = () => new HttpRpcClient(node.httpUrl, 10_000);
    let emitter: string;

    beforeAll(async () => {
      const [from] = (await anvil().call("eth_accounts", [])) as string[];
      const hash = await anvil().call("eth_sendTransaction", [{ from, data: LOG_EMITTER_BYTECODE }]);
      await anvil().call("anvil_mine", ["0x1"]);
      emitter = ((await anvil().call("eth_getTransactionReceipt", [hash])) as { contractAddress: string })
        .contractAddress;
    });

    /** Sends a call to the emitter (a log with `data`) and mines it: the block's hash. */
    async function emitAndMine(data: string): Promise<string> {
      const [from] = (await anvil().call("eth_accounts", [])) as string[];
      await anvil().call("eth_sendTransaction", [{ from, to: emitter, data }]);
      await anvil().call("anvil_mine", ["0x1"]);
      return ((await anvil().call("eth_getBlockByNumber", ["latest", false])) as { hash: string }).hash;
    }

    /**
     * Polls a filter on fresh connections until `count` changes came, then once more (nothing new): at least two
     * consecutive connections, so round robin gives both workers a turn. Every answer is kept, errors included.
     */
    async function pollUntil(url: string, filter: string, count: number, answers: RpcAnswer[]) {
      const changes: unknown[] = [];
      await waitFor(
        async () => {
          const answer = await callOnNewConnection(url, "eth_getFilterChanges", [filter]);
          answers.push(answer);
          if (Array.isArray(answer.result)) changes.push(...(answer.result as unknown[]));
          return changes.length >= count || answer.error !== undefined;
        },
        { what: `${count} changes of filter ${filter}` },
      );
      const after = await callOnNewConnection(url, "eth_getFilterChanges", [filter]);
      answers.push(after);
      if (Array.isArray(after.result)) changes.push(...(after.result as unknown[]));
      return changes;
    }

    it("answers every poll with the filter's changes, whichever worker it lands on, and uninstalls from either", async () => {
      const gateway = await start();
      const blocks = (await callOnNewConnection(gateway.url, "eth_newBlockFilter")).result as string;
      const head = Number(await anvil().call("eth_blockNumber", []));
      // From the next block: eth_getFilterLogs then answers the logs of every block the filter saw.
      const fromBlock = `0x${(head + 1).toString(16)}`;
      const logs = (
        await callOnNewConnection(gateway.url, "eth_newFilter", [
          { fromBlock, address: emitter, topics: [LOG_EMITTER_TOPIC] },
        ])
      ).result as string;
      expect(blocks).toMatch(/^0x[1-9a-f][0-9a-f]*$/);
      expect(logs).toMatch(/^0x[1-9a-f][0-9a-f]*$/);

      const answers: RpcAnswer[] = [];
      const mined: string[] = [];
      const seenBlocks: unknown[] = [];
      const seenLogs: unknown[] = [];
      for (let round = 1; round <= 3; round++) {
        mined.push(await emitAndMine(`0x0${round}`));
        seenBlocks.push(...(await pollUntil(gateway.url, blocks, 1, answers)));
        seenLogs.push(...(await pollUntil(gateway.url, logs, 1, answers)));
      }
      expect(answers.filter((a) => a.error !== undefined)).toEqual([]);
      // Every block once, in order, and every log once: the owner's buffer, drained by polls from both workers.
      expect(seenBlocks).toEqual(mined);
      expect(seenLogs.map((l) => (l as { data: string }).data)).toEqual(["0x01", "0x02", "0x03"]);
      for (let i = 0; i < 2; i++) {
        const all = await callOnNewConnection(gateway.url, "eth_getFilterLogs", [logs]);
        expect((all.result as Array<{ data: string }>).map((l) => l.data)).toEqual(["0x01", "0x02", "0x03"]);
      }

      // Uninstalled on one worker, gone on both.
      expect((await callOnNewConnection(gateway.url, "eth_uninstallFilter", [blocks])).result).toBe(true);
      expect((await callOnNewConnection(gateway.url, "eth_uninstallFilter", [blocks])).result).toBe(false);
      for (let i = 0; i < 2; i++)
        expect((await callOnNewConnection(gateway.url, "eth_getFilterChanges", [blocks])).error).toEqual({
          code: -32000,
          message: "filter not found",
        });
      expect((await callOnNewConnection(gateway.url, "eth_uninstallFilter", [logs])).result).toBe(true);
      gateway.child.kill("SIGTERM");
    });

    it("holds an address to maxFiltersPerAddress over all workers", async () => {
      const limited = writeGatewayConfig(join(dir, "filter-limit.yaml"), {
        peer: node.httpUrl,
        network: { upstreams: [{ name: "upstream", http: node.httpUrl, ws: node.wsUrl }] },
        workers: 2,
        gateway: { maxFiltersPerAddress: 3 },
      });
      const gateway = await start(limited);
      const made: RpcAnswer[] = [];
      for (let i = 0; i < 5; i++) made.push(await callOnNewConnection(gateway.url, "eth_newBlockFilter"));
      expect(made.filter((a) => typeof a.result === "string")).toHaveLength(3);
      expect(made.slice(3).map((a) => a.error?.code)).toEqual([-32005, -32005]);
      // One uninstalled (on whichever worker) makes room for one more.
      expect((await callOnNewConnection(gateway.url, "eth_uninstallFilter", [made[0]!.result])).result).toBe(
        true,
      );
      await waitFor(
        async () => typeof (await callOnNewConnection(gateway.url, "eth_newBlockFilter")).result === "string",
        {
          what: "room for a filter once one was uninstalled",
        },
      );
      expect((await callOnNewConnection(gateway.url, "eth_newBlockFilter")).error?.code).toBe(-32005);
      gateway.child.kill("SIGTERM");
    });

    it(
      'answers the filters of a worker that died "filter not found" from either worker, and serves the others',
      async () => {
        const gateway = await start();
        // Consecutive fresh connections: one filter on each worker.
        const filters = [
          (await callOnNewConnection(gateway.url, "eth_newBlockFilter")).result as string,
          (await callOnNewConnection(gateway.url, "eth_newBlockFilter")).result as string,
        ];
        const [first] = workerPids(gateway);
        process.kill(first!, "SIGKILL");
        await waitFor(() => workerPids(gateway)[2], {
          what: "a replacement worker",
          timeoutMs: WORKER_START_MS,
        });
        await waitFor(async () => (await fetch(`${gateway.admin}/readyz`)).status === 200, {
          what: "ready again",
        });
        const verdicts = new Set<string>();
        for (const filter of filters) {
          const outcomes = new Set<string>();
          for (let i = 0; i < 4; i++) {
            const answer = await callOnNewConnection(gateway.url, "eth_getFilterChanges", [filter]);
            outcomes.add(answer.error ? `${answer.error.code} ${answer.error.message}` : "changes");
          }
          // The same answer whichever worker took the poll.
          expect(outcomes.size).toBe(1);
          verdicts.add([...outcomes][0]!);
        }
        expect([...verdicts].sort()).toEqual(["-32000 filter not found", "changes"]);
        gateway.child.kill("SIGTERM");
      },
      3 * WORKER_START_MS,
    );
  });
});

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
