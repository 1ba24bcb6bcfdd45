import { Registry } from "prom-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config/loadConfig.js";
import type { AnvilNode } from "../../src/devnet/anvil.js";
import { startAnvil } from "../../src/devnet/anvil.js";
import { LOG_EMITTER_BYTECODE } from "../../src/devnet/devTransactions.js";
import type { Gateway } from "../../src/gateway/gateway.js";
import { startGateway } from "../../src/gateway/gateway.js";
import { StaticUpstreamSource } from "../../src/gateway/upstreams/staticSource.js";
import { silentLogger } from "../../src/log/logger.js";
import { HttpRpcClient } from "../../src/rpc/httpRpcClient.js";
import { waitFor } from "../support/waitFor.js";
import { post, rawWs } from "./support.js";
import type { Json } from "./support.js";

const hex = (n: number) => `0x${n.toString(16)}`;
/** anvil's safe block is 32 below its head, its finalized block 64 below: 68 and 36 at head 100. */
const HEAD = 100;
const LOG_BLOCKS = [2, 50, 95];

/** A gateway in front of one anvil that is both its reserved peer and its routed node. */
async function gatewayFor(node: AnvilNode, getLogsMaxRange: number): Promise<Gateway> {
  const config = parseConfig({
    gateway: { host: "127.0.0.1", port: 0, headPollInterval: "100ms" },
    networks: [
      {
        name: "devnet",
        chainId: 31_337,
        blockTime: "1s",
        reservedPeers: [{ name: "tags", http: node.httpUrl, ws: node.wsUrl }],
        gateway: { default: true, getLogsMaxRange },
      },
    ],
  });
  const gateway = await startGateway({
    config,
    source: new StaticUpstreamSource([
      { name: "tags", network: "devnet", httpUrl: node.httpUrl, wsUrl: node.wsUrl, routed: true },
    ]),
    logger: silentLogger(),
    registry: new Registry(),
  });
  await waitFor(() => gateway.servedHead("devnet") === HEAD, { what: `served head ${HEAD}` });
  // Followed after each head, from the peer: anvil's safe and finalized blocks at head 100.
  await waitFor(
    () => {
      const tags = gateway.blockTags("devnet");
      return tags.safe?.number === 68 && tags.finalized?.number === 36;
    },
    { what: "the agreed safe and finalized blocks" },
  );
  return gateway;
}

describe("block tags and the answers node software gives, through the gateway", () => {
  let node: AnvilNode;
  let wide: Gateway;
  let narrow: Gateway;
  const rpc = () => new HttpRpcClient(node.httpUrl, 10_000);
  const direct = (method: string, params: unknown[]) =>
    post(node.httpUrl, { jsonrpc: "2.0", id: 1, method, params });

  beforeAll(async () => {
    node = await startAnvil({ name: "tags", chainId: 31_337, noMining: true });
    const [from] = (await rpc().call("eth_accounts", [])) as string[];
    const deploy = await rpc().call("eth_sendTransaction", [{ from, data: LOG_EMITTER_BYTECODE }]);
    await rpc().call("anvil_mine", ["0x1"]);
    const emitter = ((await rpc().call("eth_getTransactionReceipt", [deploy])) as { contractAddress: string })
      .contractAddress;
    for (const block of LOG_BLOCKS) {
      const head = Number(await rpc().call("eth_blockNumber", []));
      if (block - 1 > head) await rpc().call("anvil_mine", [hex(block - 1 - head)]);
      await rpc().call("eth_sendTransaction", [
        { from, to: emitter, data: `0x${block.toString(16).padStart(2, "0")}` },
      ]);
      await rpc().call("anvil_mine", ["0x1"]);
    }
    await rpc().call("anvil_mine", [hex(HEAD - Number(await rpc().call("eth_blockNumber", [])))]);
    wide = await gatewayFor(node, 1_000);
    narrow = await gatewayFor(node, 50);
  });

  afterAll(async () => {
    await wide?.stop();
    await narrow?.stop();
    await node?.stop();
  });

  const logBlocks = (answer: Json) =>
    (answer.result as Array<{ blockNumber: string }>).map((l) => Number(l.blockNumber));

  it.each([
    {
      what: "0x0 .. finalized leaves out the blocks after the finalized one",
      filter: { fromBlock: "0x0", toBlock: "finalized" },
      blocks: [2],
    },
    { what: "finalized .. safe", filter: { fromBlock: "finalized", toBlock: "safe" }, blocks: [50] },
    { what: "safe .. latest", filter: { fromBlock: "safe", toBlock: "latest" }, blocks: [95] },
  ])("eth_getLogs $what, as the node answers it", async ({ filter, blocks }) => {
    const fromNode = await direct("eth_getLogs", [filter]);
    expect(logBlocks(fromNode.body)).toEqual(blocks);
    const through = await post(wide.url, { jsonrpc: "2.0", id: 1, method: "eth_getLogs", params: [filter] });
    expect(through.body).toEqual(fromNode.body);
  });

  it("answers eth_getFilterLogs of a filter up to finalized with the logs of finalized blocks only", async () => {
    const made = await post(wide.url, {
      jsonrpc: "2.0",
      id: 1,
      method: "eth_newFilter",
      params: [{ fromBlock: "0x0", toBlock: "finalized" }],
    });
    const logs = await post(wide.url, {
      jsonrpc: "2.0",
      id: 2,
      method: "eth_getFilterLogs",
      params: [made.body.result],
    });
    expect(logBlocks(logs.body)).toEqual([2]);
  });

  it("judges the eth_getLogs window by the finalized and safe blocks, not the head", async () => {
    // Window 50 at head 100: from 50 on. safe (68) is inside, finalized (36) below.
    const safe = await post(narrow.url, {
      jsonrpc: "2.0",
      id: 1,
      method: "eth_getLogs",
      params: [{ fromBlock: "safe" }],
    });
    expect(logBlocks(safe.body)).toEqual([95]);
    const finalized = await post(narrow.url, {
      jsonrpc: "2.0",
      id: 2,
      method: "eth_getLogs",
      params: [{ fromBlock: "finalized" }],
    });
    expect(finalized.body.error).toMatchObject({ code: -32005, data: { earliestBlock: hex(50) } });
  });

  it("pins state reads at finalized and safe to the agreed blocks", async () => {
    for (const tag of ["finalized", "safe"]) {
      const fromNode = await direct("eth_getBlockByNumber", [tag, false]);
      const through = await post(wide.url, {
        jsonrpc: "2.0",
        id: 1,
        method: "eth_getBlockByNumber",
        params: [tag, false],
      });
      expect(through.body).toEqual(fromNode.body);
    }
  });

  it("refuses pending logs as geth does", async () => {
    for (const filter of [{ fromBlock: "pending" }, { fromBlock: "0x1", toBlock: "pending" }]) {
      const answer = await post(wide.url, { jsonrpc: "2.0", id: 7, method: "eth_getLogs", params: [filter] });
      expect(answer.body).toEqual({
        jsonrpc: "2.0",
        id: 7,
        error: { code: -32602, message: "pending logs are not supported" },
      });
    }
    const filter = await post(wide.url, {
      jsonrpc: "2.0",
      id: 8,
      method: "eth_newFilter",
      params: [{ fromBlock: "pending" }],
    });
    expect(filter.body.error).toEqual({ code: -32602, message: "pending logs are not supported" });
  });

  it("refuses arguments to the methods it answers itself, as geth does", async () => {
    for (const method of ["eth_blockNumber", "eth_chainId", "eth_accounts"]) {
      const answer = await post(wide.url, { jsonrpc: "2.0", id: 3, method, params: [1, 2] });
      expect(answer.body).toEqual({
        jsonrpc: "2.0",
        id: 3,
        error: { code: -32602, message: "too many arguments, want at most 0" },
      });
      expect((await post(wide.url, { jsonrpc: "2.0", id: 4, method, params: [] })).body.result).toBeDefined();
      expect((await post(wide.url, { jsonrpc: "2.0", id: 5, method })).body.result).toBeDefined();
    }
  });

  it("answers eth_unsubscribe of an unknown subscription -32000, as geth does", async () => {
    const ws = await rawWs(`${wide.url.replace("http", "ws")}/ws`);
    try {
      const answer = await ws.call("eth_unsubscribe", ["0x5e1f0000000000000000000000000001"]);
      expect(answer).toEqual({
        jsonrpc: "2.0",
        id: 1,
        error: { code: -32000, message: "subscription not found" },
      });
      const subscribed = await ws.call("eth_subscribe", ["newHeads"]);
      expect((await ws.call("eth_unsubscribe", [subscribed.result])).result).toBe(true);
    } finally {
      ws.close();
    }
  });

  // After the tests reading the chain at head 100: it moves the chain.
  it("follows the safe and finalized blocks as the chain moves", async () => {
    await rpc().call("anvil_mine", ["0xa"]);
    await waitFor(
      () => {
        const tags = wide.blockTags("devnet");
        return tags.safe?.number === 78 && tags.finalized?.number === 46;
      },
      { what: "safe 78 and finalized 46 after ten more blocks" },
    );
    const fromNode = await direct("eth_getLogs", [{ fromBlock: "finalized", toBlock: "safe" }]);
    const through = await post(wide.url, {
      jsonrpc: "2.0",
      id: 1,
      method: "eth_getLogs",
      params: [{ fromBlock: "finalized", toBlock: "safe" }],
    });
    expect(through.body).toEqual(fromNode.body);
    // The tags the gateway resolved before the chain moved (pinned state reads above) are not served again.
    for (const tag of ["finalized", "safe"]) {
      const block = await post(wide.url, {
        jsonrpc: "2.0",
        id: 1,
        method: "eth_getBlockByNumber",
        params: [tag, false],
      });
      expect(block.body).toEqual((await direct("eth_getBlockByNumber", [tag, false])).body);
    }
  });

  it("answers a notification (no id) HTTP 200 with an empty body, as geth does", async () => {
    const response = await fetch(wide.url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", method: "eth_blockNumber", params: [] }),
    });
    expect(response.status).toBe(200);
    expect(await response.text()).toBe("");
  });
});
