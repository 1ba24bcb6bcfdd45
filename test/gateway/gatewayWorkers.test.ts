import type { ChildProcessWithoutNullStreams } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { Agent, request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import type { AnvilNode } from "../../src/devnet/anvil.js";
import { HttpRpcClient } from "../../src/rpc/httpRpcClient.js";
import { parseExposition } from "../../src/scaling/sources/parseExposition.js";
import { spawnGateway } from "../support/runCli.js";
import type { SpawnedGateway } from "../support/runCli.js";
import { waitFor } from "../support/waitFor.js";
import { startUpstreamNode, writeGatewayConfig } from "./support.js";

/** eth_blockNumber on a connection of its own, so the cluster hands each call to the next worker. */
function blockNumberOnNewConnection(url: string): Promise<string> {
  const body = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_blockNumber", params: [] });
  return new Promise((resolve, reject) => {
    const req = request(
      `${url}/`,
      { method: "POST", agent: false, headers: { "content-type": "application/json" } },
      (res) => {
        let text = "";
        res.on("data", (chunk: Buffer) => (text += chunk.toString()));
        res.on("end", () => resolve((JSON.parse(text) as { result: string }).result));
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(body);
  });
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
      timeoutMs: 20_000,
    });
    return gateway;
  }

  it("sums the workers' request counts on /metrics, keeps a dead worker's in the sum, and replaces it", async () => {
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
    const replacement = await waitFor(() => workerPids(gateway)[2], { what: "a replacement worker" });
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
  });

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
});

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
