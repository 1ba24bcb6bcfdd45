import { JsonRpcProvider, Network, WebSocketProvider } from "ethers";
import type { Registry } from "prom-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPublicClient, http, webSocket } from "viem";
import type { Devnet } from "../../src/devnet/devnet.js";
import { DEV_ACCOUNT, LOG_EMITTER_TOPIC } from "../../src/devnet/devTransactions.js";
import type { Gateway } from "../../src/gateway/gateway.js";
import { startTestDevnet } from "../support/devnet.js";
import { waitFor } from "../support/waitFor.js";
import { CHAIN_ID, NETWORK, post, rawWs, startTestGateway, waitForServedHead } from "./support.js";

const hex = (n: number) => `0x${n.toString(16)}`;

describe("gateway in front of a real devnet", () => {
  let devnet: Devnet;
  let gateway: Gateway;
  let registry: Registry;
  let wsUrl: string;
  let emitter: string;
  const cleanup: Array<() => unknown> = [];

  beforeAll(async () => {
    devnet = await startTestDevnet({
      networks: [{ name: NETWORK, chainId: CHAIN_ID, fullNodes: 1, lightNodes: 2 }],
    });
    emitter = (await devnet.deployLogEmitter(NETWORK)).contractAddress;
    for (let i = 0; i < 6; i++) await devnet.mine(NETWORK);
    await devnet.sendTransaction(NETWORK, { to: emitter, data: "0x1234" });
    await devnet.mine(NETWORK);
    ({ gateway, registry, wsUrl } = await startTestGateway(devnet, {}, { getLogsMaxRange: 4 }));
    await waitForServedHead(gateway, devnet);
  });

  afterAll(async () => {
    for (const fn of cleanup.reverse()) await fn();
    await gateway?.stop();
  });

  it("serves ethers' JsonRpcProvider: head, blocks, balances, and its batches", async () => {
    const provider = new JsonRpcProvider(`${gateway.url}/`, Network.from(CHAIN_ID), { staticNetwork: true });
    cleanup.push(() => provider.destroy());
    const [number, block, balance, chainId] = await Promise.all([
      provider.getBlockNumber(),
      provider.getBlock("latest"),
      provider.getBalance(DEV_ACCOUNT),
      provider.send("eth_chainId", []),
    ]);
    expect(number).toBe(devnet.head(NETWORK).number);
    expect(block?.hash).toBe(devnet.head(NETWORK).hash);
    expect(balance).toBeGreaterThan(0n);
    expect(chainId).toBe(hex(CHAIN_ID));
  });

  it("serves viem over HTTP: block number, block, logs of the emitter", async () => {
    const client = createPublicClient({ transport: http(`${gateway.url}/devnet`) });
    expect(Number(await client.getBlockNumber({ cacheTime: 0 }))).toBe(devnet.head(NETWORK).number);
    const logs = await client.getLogs({
      address: emitter as `0x${string}`,
      fromBlock: BigInt(devnet.head(NETWORK).number - 2),
    });
    expect(logs).toHaveLength(1);
    expect(logs[0]!.topics[0]).toBe(LOG_EMITTER_TOPIC);
    expect(logs[0]!.data).toBe("0x1234");
  });

  it("answers a request above the served head as a node at that head would", async () => {
    const head = gateway.servedHead(NETWORK)!;
    const { body } = await post(gateway.url, [
      { jsonrpc: "2.0", id: 1, method: "eth_getBlockByNumber", params: [hex(head + 5), false] },
      { jsonrpc: "2.0", id: 2, method: "eth_getBalance", params: [DEV_ACCOUNT, hex(head + 5)] },
      { jsonrpc: "2.0", id: 3, method: "eth_blockNumber" },
    ]);
    expect(body).toEqual([
      { jsonrpc: "2.0", id: 1, result: null },
      { jsonrpc: "2.0", id: 2, error: { code: -32000, message: "header not found" } },
      { jsonrpc: "2.0", id: 3, result: hex(head) },
    ]);
  });

  describe("eth_getLogs limit (4 blocks in this test) over HTTP, batch and WebSocket", () => {
    const table = (head: number) => [
      { what: "inside the window", filter: { fromBlock: hex(head - 2) }, code: undefined },
      {
        what: "exactly at the limit",
        filter: { fromBlock: hex(head - 4), toBlock: "latest" },
        code: undefined,
      },
      { what: "beyond it", filter: { fromBlock: hex(head - 5) }, code: -32005 },
      { what: "earliest", filter: { fromBlock: "earliest", toBlock: "latest" }, code: -32005 },
      { what: "a blockHash", filter: { blockHash: "HASH" }, code: undefined },
      {
        what: "toBlock past the head",
        filter: { fromBlock: hex(head - 1), toBlock: hex(head + 1) },
        code: -32602,
      },
      {
        what: "fromBlock after toBlock",
        filter: { fromBlock: hex(head - 1), toBlock: hex(head - 2) },
        code: -32602,
      },
    ];

    it("gives the same answers on every transport", async () => {
      const head = gateway.servedHead(NETWORK)!;
      const hash = devnet.head(NETWORK).hash;
      const calls = table(head).map((row, i) => ({
        jsonrpc: "2.0",
        id: i,
        method: "eth_getLogs",
        params: [JSON.parse(JSON.stringify(row.filter).replace("HASH", hash))],
      }));
      const single = await Promise.all(calls.map(async (call) => (await post(gateway.url, call)).body));
      const batch = (await post(gateway.url, calls)).body;
      const ws = await rawWs(wsUrl);
      cleanup.push(() => ws.close());
      const overWs = await Promise.all(calls.map((call) => ws.call(call.method, call.params)));
      table(head).forEach((row, i) => {
        for (const [transport, answer] of [
          ["http", single[i]],
          ["batch", batch[i]],
          ["ws", overWs[i]],
        ] as const) {
          if (row.code === undefined)
            expect(answer, `${row.what} over ${transport}`).toHaveProperty("result");
          else expect(answer.error?.code, `${row.what} over ${transport}`).toBe(row.code);
        }
      });
      expect(single[2].error.data).toEqual({ limit: 4, earliestBlock: hex(head - 4), head: hex(head) });
    });
  });

  describe("bad input", () => {
    it.each([
      ["malformed JSON", '{"jsonrpc":', 200, -32700],
      ["an empty batch", "[]", 200, -32600],
      ["an admin method", { jsonrpc: "2.0", id: 1, method: "admin_nodeInfo" }, 200, -32601],
      ["a dev-node control", { jsonrpc: "2.0", id: 1, method: "anvil_mine", params: [] }, 200, -32601],
      [
        "eth_subscribe over HTTP",
        { jsonrpc: "2.0", id: 1, method: "eth_subscribe", params: ["newHeads"] },
        200,
        -32601,
      ],
      [
        "a batch over the limit",
        Array(101).fill({ jsonrpc: "2.0", id: 1, method: "eth_chainId" }),
        200,
        -32600,
      ],
    ])("%s gets the proper JSON-RPC error", async (_what, body, status, code) => {
      const answer = await post(gateway.url, body);
      expect(answer.status).toBe(status);
      // A batch over the limit is answered as geth does: an array holding the one error.
      expect((Array.isArray(answer.body) ? answer.body[0] : answer.body).error.code).toBe(code);
    });

    it("refuses oversized bodies (413), other content types (415), GET (405) and unknown paths (404)", async () => {
      expect((await post(gateway.url, "x".repeat(1_100_000))).status).toBe(413);
      expect((await post(gateway.url, "{}", { "content-type": "text/plain" })).status).toBe(415);
      expect((await fetch(gateway.url)).status).toBe(405);
      expect(
        (await post(`${gateway.url}/goerli`, { jsonrpc: "2.0", id: 1, method: "eth_chainId" })).status,
      ).toBe(404);
      // Still serving after all of that.
      expect((await post(gateway.url, { jsonrpc: "2.0", id: 1, method: "eth_chainId" })).body.result).toBe(
        hex(CHAIN_ID),
      );
    });

    it("answers CORS preflights for browser dapps", async () => {
      const response = await fetch(gateway.url, {
        method: "OPTIONS",
        headers: { origin: "https://dapp.example" },
      });
      expect(response.status).toBe(204);
      expect(response.headers.get("access-control-allow-origin")).toBe("*");
    });

    it("answers bad WebSocket frames and keeps the connection", async () => {
      const ws = await rawWs(wsUrl);
      cleanup.push(() => ws.close());
      ws.socket.send("not json");
      await waitFor(() => ws.messages.find((m) => m.error?.code === -32700), { what: "a parse error" });
      expect((await ws.call("eth_subscribe", ["pendingTransactions"])).error.code).toBe(-32602);
      expect((await ws.call("eth_chainId")).result).toBe(hex(CHAIN_ID));
    });
  });

  it("counts every call in the metrics, batch items included, and for the autoscaler only what nodes serve", async () => {
    const before = gateway.requestTotals().get(NETWORK) ?? 0;
    await post(gateway.url, [
      { jsonrpc: "2.0", id: 1, method: "eth_chainId" },
      { jsonrpc: "2.0", id: 2, method: "eth_blockNumber" },
      { jsonrpc: "2.0", id: 3, method: "debug_foo" },
    ]);
    // Answered by the gateway itself or refused: no node served them.
    expect(gateway.requestTotals().get(NETWORK)).toBe(before);
    const text = await registry.metrics();
    expect(text).toMatch(
      /lightfleet_gateway_requests_total\{network="devnet",method="eth_chainId",outcome="ok"\} \d+/,
    );
    expect(text).toMatch(
      /lightfleet_gateway_requests_total\{network="devnet",method="other",outcome="refused"\} \d+/,
    );
  });

  it("streams newHeads to ethers' WebSocketProvider and viem's watchBlocks, every block in order", async () => {
    const provider = new WebSocketProvider(wsUrl, Network.from(CHAIN_ID), { staticNetwork: true });
    const viem = createPublicClient({ transport: webSocket(wsUrl) });
    const fromEthers: number[] = [];
    const fromViem: number[] = [];
    provider.on("block", (n: number) => fromEthers.push(n));
    const unwatch = viem.watchBlocks({ onBlock: (b) => fromViem.push(Number(b.number)), emitMissed: true });
    cleanup.push(async () => {
      unwatch();
      await provider.destroy();
    });
    const start = devnet.head(NETWORK).number;
    // Both clients subscribe asynchronously: wait until the gateway holds both subscriptions.
    await waitFor(
      async () => {
        const metric = await registry.getSingleMetric("lightfleet_gateway_ws_subscriptions")!.get();
        return metric.values.find((v) => v.labels.type === "newHeads")?.value === 2;
      },
      { what: "two newHeads subscriptions" },
    );
    await devnet.mine(NETWORK);
    await waitFor(() => fromEthers.includes(start + 1) && fromViem.includes(start + 1), {
      what: "first streamed block",
    });
    for (let i = 0; i < 4; i++) await devnet.mine(NETWORK);
    const end = start + 5;
    await waitFor(() => fromEthers.includes(end) && fromViem.includes(end), { what: `block ${end} on both` });
    const expected = Array.from({ length: 5 }, (_, i) => start + 1 + i);
    // viem fetches each announced block, so its callbacks may complete out of order: compare the set.
    expect([...new Set(fromViem.filter((n) => n > start))].sort((a, b) => a - b)).toEqual(expected);
    expect(fromEthers.filter((n) => n > start)).toEqual(expected);
  });
});
