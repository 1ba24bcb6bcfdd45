import type { Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { DEV_ACCOUNT, LOG_EMITTER_TOPIC } from "../../src/devnet/devTransactions.js";
import { HttpRpcClient } from "../../src/rpc/httpRpcClient.js";
import { IMPLEMENTATIONS, startTestDevnet, startTestDevnetOn } from "../support/devnet.js";
import { waitFor } from "../support/waitFor.js";
import { CHAIN_ID, NETWORK, post, rawWs, startTestGateway, waitForServedHead } from "./support.js";
import type { Json } from "./support.js";

async function cacheCount(registry: Registry, result: "hit" | "miss"): Promise<number> {
  const values =
    (await registry.getSingleMetric("lightfleet_gateway_cache_requests_total")?.get())?.values ?? [];
  return values.filter((v) => v.labels.result === result).reduce((sum, v) => sum + v.value, 0);
}

const networks = [{ name: NETWORK, chainId: CHAIN_ID, fullNodes: 1, lightNodes: 2 }];

// What a client sees across a reorg must not depend on the nodes' implementation: each case runs on anvil and geth.
describe.each(IMPLEMENTATIONS)("the gateway across a reorg on %s", (implementation) => {
  it("serves blocks and receipts by hash from the cache, and never one that a reorg replaced", async (context) => {
    const devnet = await startTestDevnetOn(implementation, () => context.skip(), { networks });
    for (let i = 0; i < 3; i++) await devnet.mine(NETWORK);
    const sent = await devnet.sendTransaction(NETWORK, { to: DEV_ACCOUNT, value: 1n, gasLimit: 21_000 });
    await devnet.mine(NETWORK);
    await devnet.mine(NETWORK);
    const { gateway, registry } = await startTestGateway(devnet);
    try {
      await waitForServedHead(gateway, devnet);
      const ask = async (method: string, params: unknown[]): Promise<Json> =>
        (await post(gateway.url, { jsonrpc: "2.0", id: 7, method, params })).body;
      const receipt = (await ask("eth_getTransactionReceipt", [sent.hash])).result;
      const oldHash: string = receipt.blockHash;
      const block = (await ask("eth_getBlockByHash", [oldHash, false])).result;
      expect(block.hash).toBe(oldHash);

      // Asked again: from the cache, the same answers, with the caller's id.
      const hits = await cacheCount(registry, "hit");
      const again = await ask("eth_getBlockByHash", [oldHash, false]);
      expect(again).toEqual({ jsonrpc: "2.0", id: 7, result: block });
      expect((await ask("eth_getTransactionReceipt", [sent.hash])).result).toEqual(receipt);
      expect(await cacheCount(registry, "hit")).toBe(hits + 2);
      // Latest is never cached.
      const misses = await cacheCount(registry, "miss");
      await ask("eth_getBlockByNumber", ["latest", false]);
      await ask("eth_getBalance", [DEV_ACCOUNT, "latest"]);
      expect(await cacheCount(registry, "miss")).toBe(misses);
      expect(await cacheCount(registry, "hit")).toBe(hits + 2);

      // A reorg replaces the receipt's block: the transaction moves to the new block at its height.
      const head = await devnet.reorg(NETWORK, 3);
      await waitFor(
        async () =>
          (await ask("eth_getBlockByNumber", [`0x${head.number.toString(16)}`, false])).result?.hash ===
          head.hash,
        { what: "the gateway on the new branch" },
      );
      const full = new HttpRpcClient(devnet.nodes(NETWORK).find((n) => n.role === "full")!.httpUrl, 5_000);
      // geth indexes a reorged chain's transactions after its head moves: until then a node answers null for them.
      const newReceipt = await waitFor(
        () => full.call<Json | null>("eth_getTransactionReceipt", [sent.hash]),
        {
          what: "the full node's receipt on the new branch",
        },
      );
      expect(newReceipt.blockHash).not.toBe(oldHash);
      // What the gateway answers is what the new chain has: the new receipt (once its node has indexed it: the old
      // receipt, if the cache served it, is never null), and at the old block's height a new block.
      const served = await waitFor(
        async () => (await ask("eth_getTransactionReceipt", [sent.hash])).result as Json,
        {
          what: "the gateway's receipt on the new branch",
        },
      );
      expect(served).toEqual(newReceipt);
      const atOldHeight = (await ask("eth_getBlockByNumber", [receipt.blockNumber, false])).result;
      expect(atOldHeight.hash).not.toBe(oldHash);
      // The replaced block by hash is never served from the cache, however often asked: each call goes to a node, and
      // gets what the nodes say of it now (anvil drops it; geth keeps it by hash as a block off its chain).
      const fromNodes = await Promise.all(
        devnet
          .nodes(NETWORK)
          .filter((n) => n.role === "light")
          .map((n) => new HttpRpcClient(n.httpUrl, 5_000).call<Json>("eth_getBlockByHash", [oldHash, false])),
      );
      expect(fromNodes[1]).toEqual(fromNodes[0]);
      const hitsAfterReorg = await cacheCount(registry, "hit");
      for (let i = 0; i < 2; i++)
        expect((await ask("eth_getBlockByHash", [oldHash, false])).result).toEqual(fromNodes[0]);
      expect(await cacheCount(registry, "hit")).toBe(hitsAfterReorg);
      const newBlock = (await ask("eth_getBlockByHash", [newReceipt.blockHash, false])).result;
      expect(newBlock.hash).toBe(newReceipt.blockHash);
      expect(newBlock.transactions).toContain(sent.hash);
    } finally {
      await gateway.stop();
    }
  }, 120_000);

  it("sends logs subscriptions per block, and removed: true for logs a reorg took away", async (context) => {
    const devnet = await startTestDevnetOn(implementation, () => context.skip(), { networks });
    const emitter = (await devnet.deployLogEmitter(NETWORK)).contractAddress;
    await devnet.mine(NETWORK);
    const { gateway, wsUrl } = await startTestGateway(devnet);
    const ws = await rawWs(wsUrl);
    try {
      await waitForServedHead(gateway, devnet);
      const { result: subscription } = await ws.call("eth_subscribe", [
        "logs",
        { address: emitter, topics: [LOG_EMITTER_TOPIC] },
      ]);
      await devnet.sendTransaction(NETWORK, { to: emitter, data: "0xbeef" });
      await devnet.mine(NETWORK);
      const logsOf = () =>
        ws.messages.filter((m) => m.params?.subscription === subscription).map((m) => m.params.result);
      await waitFor(() => logsOf().length === 1, { what: "the log" });
      expect(logsOf()[0]).toMatchObject({ data: "0xbeef", removed: false });
      // The block with the log is replaced by a reorg: its log is withdrawn, then announced again from the new branch.
      await devnet.reorg(NETWORK, 1);
      await devnet.mine(NETWORK);
      await waitFor(() => logsOf().length >= 3, { what: "removed and re-announced log" });
      expect(logsOf()[1]).toMatchObject({ data: "0xbeef", removed: true, blockHash: logsOf()[0].blockHash });
      expect(logsOf()[2]).toMatchObject({ data: "0xbeef", removed: false });
      expect(logsOf()[2].blockHash).not.toBe(logsOf()[0].blockHash);
      expect(logsOf()).toHaveLength(3);
      expect((await ws.call("eth_unsubscribe", [subscription])).result).toBe(true);
      expect((await ws.call("eth_unsubscribe", [subscription])).error).toEqual({
        code: -32000,
        message: "subscription not found",
      });
    } finally {
      ws.close();
      await gateway.stop();
    }
  }, 120_000);
});

// anvil only: its finalized block trails the head by 64 (the geth devnet names no finalized block).
describe("the response cache at finalized heights", () => {
  it("serves a finalized block by hash that the nodes' recent chains no longer hold", async () => {
    const devnet = await startTestDevnet({
      networks: [{ name: NETWORK, chainId: CHAIN_ID, fullNodes: 1, lightNodes: 2 }],
    });
    // anvil's finalized block is 64 below its head: 6 at head 70. The gateway starts after: block 1 is on no recent
    // chain it follows, so only its canonical hash at a final height can say it stands. A transaction in block 2.
    await devnet.mine(NETWORK);
    const sent = await devnet.sendTransaction(NETWORK, { to: DEV_ACCOUNT, value: 1n, gasLimit: 21_000 });
    for (let i = 0; i < 69; i++) await devnet.mine(NETWORK);
    const { gateway, registry } = await startTestGateway(devnet);
    try {
      await waitForServedHead(gateway, devnet);
      await waitFor(() => (gateway.blockTags(NETWORK).finalized?.number ?? 0) >= 1, {
        what: "the peers' agreed finalized block",
      });
      const ask = async (method: string, params: unknown[]): Promise<Json> =>
        (await post(gateway.url, { jsonrpc: "2.0", id: 5, method, params })).body;
      const full = new HttpRpcClient(devnet.nodes(NETWORK).find((n) => n.role === "full")!.httpUrl, 5_000);
      const block1 = await full.call<Json>("eth_getBlockByNumber", ["0x1", false]);
      expect(block1.hash).toMatch(/^0x[0-9a-f]{64}$/);

      // The first answers come from a node while the block's hash is checked against the canonical one at height 1.
      const hitsBefore = await cacheCount(registry, "hit");
      await waitFor(
        async () => {
          expect((await ask("eth_getBlockByHash", [block1.hash, false])).result).toEqual(block1);
          return (await cacheCount(registry, "hit")) > hitsBefore;
        },
        { what: "a cache hit for finalized block 1 by hash" },
      );
      // From then on every call is a hit: none goes to a node.
      const hits = await cacheCount(registry, "hit");
      const misses = await cacheCount(registry, "miss");
      for (let i = 0; i < 10; i++)
        expect(await ask("eth_getBlockByHash", [block1.hash, false])).toEqual({
          jsonrpc: "2.0",
          id: 5,
          result: block1,
        });
      expect(await cacheCount(registry, "hit")).toBe(hits + 10);
      expect(await cacheCount(registry, "miss")).toBe(misses);

      // A hit's bytes, for every kind of id: the id as the client wrote it, and a length that counts the bytes (a
      // numeric id's answer is written as Latin-1 from the kept ASCII text, any other as UTF-8).
      const blockText = JSON.stringify(block1);
      for (const id of ["7", "12345678901234567890", "1.0", '"é✓ id"', '"a\\u0041"', "null"]) {
        const response = await fetch(gateway.url, {
          method: "POST",
          headers: { "content-type": "application/json", "accept-encoding": "identity" },
          body: `{"jsonrpc":"2.0","id":${id},"method":"eth_getBlockByHash","params":["${block1.hash}",false]}`,
        });
        const bytes = Buffer.from(await response.arrayBuffer());
        expect(Number(response.headers.get("content-length"))).toBe(bytes.length);
        expect(JSON.parse(bytes.toString())).toEqual({ jsonrpc: "2.0", id: JSON.parse(id), result: block1 });
        expect(bytes.toString()).toContain(`"id":${id},`);
        expect(JSON.stringify(JSON.parse(bytes.toString()).result)).toBe(blockText);
        // Gzipped for a client that takes it (fetch inflates it): the same answer.
        const zipped = await post(
          gateway.url,
          `{"jsonrpc":"2.0","id":${id},"method":"eth_getBlockByHash","params":["${block1.hash}",false]}`,
        );
        expect(zipped.body).toEqual({ jsonrpc: "2.0", id: JSON.parse(id), result: block1 });
      }
      expect(await cacheCount(registry, "hit")).toBe(hits + 22);

      // A receipt by hash names its block: final there too once that block's hash is the canonical one.
      const receipt = await full.call<Json>("eth_getTransactionReceipt", [sent.hash]);
      expect(Number(receipt.blockNumber)).toBe(2);
      const receiptHits = await cacheCount(registry, "hit");
      await waitFor(
        async () => {
          expect((await ask("eth_getTransactionReceipt", [sent.hash])).result).toEqual(receipt);
          return (await cacheCount(registry, "hit")) > receiptHits;
        },
        { what: "a cache hit for a receipt in finalized block 2" },
      );
    } finally {
      await gateway.stop();
    }
  });

  it("caches answers by number at or below the peers' finalized block, and none above it", async () => {
    const devnet = await startTestDevnet({
      networks: [{ name: NETWORK, chainId: CHAIN_ID, fullNodes: 1, lightNodes: 2 }],
    });
    // anvil's finalized block is 64 below its head: 6 at head 70.
    for (let i = 0; i < 70; i++) await devnet.mine(NETWORK);
    const { gateway, registry } = await startTestGateway(devnet);
    try {
      await waitForServedHead(gateway, devnet);
      await waitFor(() => (gateway.blockTags(NETWORK).finalized?.number ?? 0) >= 6, {
        what: "the peers' agreed finalized block",
      });
      const finalized = gateway.blockTags(NETWORK).finalized!.number;
      const ask = async (method: string, params: unknown[]): Promise<Json> =>
        (await post(gateway.url, { jsonrpc: "2.0", id: 3, method, params })).body;
      const atFinalized = `0x${finalized.toString(16)}`;
      const first = (await ask("eth_getBlockByNumber", [atFinalized, false])).result;
      expect(Number(first.number)).toBe(finalized);
      const hits = await cacheCount(registry, "hit");
      expect((await ask("eth_getBlockByNumber", [atFinalized, false])).result).toEqual(first);
      await ask("eth_getBalance", [DEV_ACCOUNT, atFinalized]);
      await ask("eth_getBalance", [DEV_ACCOUNT, atFinalized]);
      expect(await cacheCount(registry, "hit")).toBe(hits + 2);

      // Above the finalized block nothing is kept, whatever the number.
      const above = `0x${(finalized + 10).toString(16)}`;
      const misses = await cacheCount(registry, "miss");
      await ask("eth_getBlockByNumber", [above, false]);
      await ask("eth_getBlockByNumber", [above, false]);
      expect(await cacheCount(registry, "hit")).toBe(hits + 2);
      expect(await cacheCount(registry, "miss")).toBe(misses);
    } finally {
      await gateway.stop();
    }
  });
});
