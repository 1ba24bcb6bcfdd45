import { JsonRpcProvider, Network } from "ethers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPublicClient, http } from "viem";
import type { Devnet } from "../../src/devnet/devnet.js";
import { LOG_EMITTER_TOPIC } from "../../src/devnet/devTransactions.js";
import { FilterStore } from "../../src/gateway/filters/filterStore.js";
import type { Gateway } from "../../src/gateway/gateway.js";
import type { FeedBlock } from "../../src/gateway/ws/headFeed.js";
import type { StreamListener } from "../../src/gateway/ws/networkStreams.js";
import { startTestDevnet } from "../support/devnet.js";
import { waitFor } from "../support/waitFor.js";
import { CHAIN_ID, NETWORK, post, rawWs, startTestGateway, waitForServedHead } from "./support.js";
import type { Json } from "./support.js";

const call = (method: string, params: unknown[] = [], id: number | string = 1) => ({
  jsonrpc: "2.0" as const,
  id,
  method,
  params,
});

describe("filters served by the gateway from its own streams", () => {
  let devnet: Devnet;
  let gateway: Gateway;
  let wsUrl: string;
  let emitter: `0x${string}`;

  beforeAll(async () => {
    devnet = await startTestDevnet({
      networks: [{ name: NETWORK, chainId: CHAIN_ID, fullNodes: 1, lightNodes: 2 }],
    });
    emitter = (await devnet.deployLogEmitter(NETWORK)).contractAddress as `0x${string}`;
    await devnet.mine(NETWORK);
    ({ gateway, wsUrl } = await startTestGateway(devnet, {
      trustForwardedFor: true,
      maxFiltersPerAddress: 4,
    }));
    await waitForServedHead(gateway, devnet);
  });

  afterAll(async () => {
    await gateway?.stop();
  });

  /** Mines a block and waits until the gateway serves it. */
  const mine = async () => {
    await devnet.mine(NETWORK);
    return waitForServedHead(gateway, devnet);
  };

  it("delivers contract events to ethers, which polls them with eth_newFilter / eth_getFilterChanges", async () => {
    const provider = new JsonRpcProvider(gateway.url, Network.from(CHAIN_ID), {
      staticNetwork: true,
      pollingInterval: 100,
    });
    try {
      const seen: string[] = [];
      await provider.on({ address: emitter, topics: [LOG_EMITTER_TOPIC] }, (log: { data: string }) => {
        seen.push(log.data);
      });
      // ethers installs its filter (eth_newFilter) at its first poll, then asks for the changes at every new block: the
      // event is emitted until ethers has its filter in place, at most a few times.
      await waitFor(
        async () => {
          await devnet.sendTransaction(NETWORK, { to: emitter, data: "0xabcd" });
          await mine();
          return waitFor(() => seen.includes("0xabcd"), { timeoutMs: 2_000 }).catch(() => false);
        },
        { timeoutMs: 30_000, what: "ethers to see the event" },
      );
    } finally {
      provider.destroy();
    }
  });

  it("serves viem's block and event filters: changes, logs, uninstall", async () => {
    const client = createPublicClient({ transport: http(gateway.url) });
    const blocks = await client.createBlockFilter();
    const start = gateway.servedHead(NETWORK)!;
    const events = await client.createEventFilter({ address: emitter, fromBlock: BigInt(start) });
    await devnet.sendTransaction(NETWORK, { to: emitter, data: "0x0102" });
    await mine();
    const second = await mine();
    const hashes = await client.getFilterChanges({ filter: blocks });
    const served = await Promise.all(
      Array.from({ length: second - start }, (_, i) =>
        client.getBlock({ blockNumber: BigInt(start + 1 + i) }),
      ),
    );
    expect(hashes).toEqual(served.map((b) => b.hash));
    expect(await client.getFilterChanges({ filter: blocks })).toEqual([]);
    const logs = await client.getFilterChanges({ filter: events });
    expect(logs.map((l) => l.data)).toEqual(["0x0102"]);
    expect(await client.getFilterChanges({ filter: events })).toEqual([]);
    expect((await client.getFilterLogs({ filter: events })).map((l) => l.data)).toContain("0x0102");
    expect(await client.uninstallFilter({ filter: blocks })).toBe(true);
    expect(await client.uninstallFilter({ filter: blocks })).toBe(false);
    const gone = (await post(gateway.url, call("eth_getFilterChanges", [blocks.id]))).body as Json;
    expect(gone.error).toEqual({ code: -32000, message: "filter not found" });
    await client.uninstallFilter({ filter: events });
  });

  it("keeps a filter through the loss and restart of a node", async () => {
    const id = ((await post(gateway.url, call("eth_newBlockFilter"))).body as Json).result as string;
    const from = gateway.servedHead(NETWORK)!;
    await devnet.fault(`${NETWORK}-light-0`, { kind: "kill" });
    await mine();
    await mine();
    await devnet.fault(`${NETWORK}-light-0`, { kind: "heal" });
    await mine();
    const hashes = ((await post(gateway.url, call("eth_getFilterChanges", [id]))).body as Json)
      .result as string[];
    const latest = ((await post(gateway.url, call("eth_getBlockByNumber", ["latest", false]))).body as Json)
      .result;
    expect(hashes).toHaveLength(Number(latest.number) - from);
    expect(hashes.at(-1)).toBe(latest.hash);
    await post(gateway.url, call("eth_uninstallFilter", [id]));
  });

  it("holds each client to its number of filters, and serves them over WebSocket too", async () => {
    const as = (address: string, body: unknown) => post(gateway.url, body, { "x-forwarded-for": address });
    for (let i = 0; i < 4; i++)
      expect((await as("198.51.100.1", call("eth_newBlockFilter"))).body.result).toMatch(/^0x/);
    const refused = (await as("198.51.100.1", call("eth_newBlockFilter"))).body as Json;
    expect(refused.error.code).toBe(-32005);
    expect(refused.error.data).toEqual({ limit: 4 });
    expect((await as("198.51.100.2", call("eth_newBlockFilter"))).body.result).toMatch(/^0x/);

    const ws = await rawWs(wsUrl);
    try {
      const id = (await ws.call("eth_newBlockFilter")).result as string;
      await mine();
      const changes = await ws.call("eth_getFilterChanges", [id]);
      const latest = await ws.call("eth_getBlockByNumber", ["latest", false]);
      expect(changes.result).toContain(latest.result.hash);
    } finally {
      ws.close();
    }
  });

  it("refuses eth_newPendingTransactionFilter clearly", async () => {
    const answer = (await post(gateway.url, call("eth_newPendingTransactionFilter"))).body as Json;
    expect(answer.error.code).toBe(-32601);
    expect(answer.error.message).toMatch(/not available on this endpoint.*pending transactions/);
  });
});

describe("filter expiry and bounds", () => {
  function store(now: { t: number }) {
    const listeners: StreamListener[] = [];
    const filters = new FilterStore({
      streams: { add: (l) => (listeners.push(l), () => undefined) },
      getLogs: (request) => ({ jsonrpc: "2.0", id: request.id ?? null, result: [] }),
      maxPerClient: 2,
      timeoutMs: 5 * 60_000,
      now: () => now.t,
    });
    const block = (n: number) =>
      listeners.forEach((l) =>
        l.onBlock({ number: n, hash: `0x${n.toString(16).padStart(64, "0")}` } as FeedBlock, async () => []),
      );
    return { filters, block };
  }

  it("removes a filter unpolled for 5 minutes, and keeps a polled one", async () => {
    const now = { t: 0 };
    const { filters, block } = store(now);
    const a = (filters.answer(call("eth_newBlockFilter"), "c") as Json).result;
    const b = (filters.answer(call("eth_newBlockFilter"), "c") as Json).result;
    now.t = 4 * 60_000;
    block(1);
    expect((filters.answer(call("eth_getFilterChanges", [a]), "c") as Json).result).toHaveLength(1);
    now.t = 5 * 60_000 + 1;
    filters.sweep();
    expect(filters.size).toBe(1);
    expect((filters.answer(call("eth_getFilterChanges", [b]), "c") as Json).error.message).toBe(
      "filter not found",
    );
    // The expired one no longer counts against its client.
    expect((filters.answer(call("eth_newBlockFilter"), "c") as Json).result).toMatch(/^0x/);
    now.t += 9 * 60_000 + 2;
    filters.sweep();
    expect(filters.size).toBe(0);
  });

  it("tells a client that polled too seldom that changes were dropped", () => {
    const now = { t: 0 };
    const { filters, block } = store(now);
    const id = (filters.answer(call("eth_newBlockFilter"), "c") as Json).result;
    for (let n = 1; n <= 10_005; n++) block(n);
    const overflow = filters.answer(call("eth_getFilterChanges", [id]), "c") as Json;
    expect(overflow.error.code).toBe(-32005);
    const kept = (filters.answer(call("eth_getFilterChanges", [id]), "c") as Json).result as string[];
    expect(kept).toHaveLength(10_000);
    expect(kept[0]).toBe(`0x${(6).toString(16).padStart(64, "0")}`);
  });
});
