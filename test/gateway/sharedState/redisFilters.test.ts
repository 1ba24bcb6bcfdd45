import { Registry } from "prom-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RedisFilters } from "../../../src/gateway/sharedState/redisFilters.js";
import { SharedStore } from "../../../src/gateway/sharedState/sharedStore.js";
import { silentLogger } from "../../../src/log/logger.js";
import type { JsonRpcRequest, JsonRpcResponse } from "../../../src/rpc/jsonRpc.js";
import { redisTool, startRedis } from "../../support/redisServer.js";
import type { RedisServer } from "../../support/redisServer.js";
import { waitFor } from "../../support/waitFor.js";

/** A chain the fake nodes serve: hashes by height, changed by `reorg`. */
class FakeChain {
  hashes: string[] = ["0xgenesis"];
  get head(): number {
    return this.hashes.length - 1;
  }
  mine(count: number, branch = "a"): void {
    for (let i = 0; i < count; i++) this.hashes.push(`0x${branch}${this.hashes.length}`);
  }
  /** Replaces the blocks from `from` on with `count` new ones of another branch. */
  reorg(from: number, count: number, branch: string): void {
    this.hashes.length = from;
    this.mine(count, branch);
  }
  fetch = async (request: JsonRpcRequest): Promise<JsonRpcResponse> => {
    const id = request.id ?? null;
    const params = request.params as unknown[];
    if (request.method === "eth_getBlockByNumber") {
      const hash = this.hashes[Number(params[0])];
      return { jsonrpc: "2.0", id, result: hash ? { hash } : null };
    }
    // One log per block, its data the block's hash.
    const { fromBlock, toBlock } = params[0] as { fromBlock: string; toBlock: string };
    const logs = [];
    for (let n = Number(fromBlock); n <= Number(toBlock); n++)
      logs.push({ blockNumber: `0x${n.toString(16)}`, blockHash: this.hashes[n], data: this.hashes[n] });
    return { jsonrpc: "2.0", id, result: logs };
  };
}

if (!redisTool.path) console.warn(`skipping the Redis filter tests: ${redisTool.missing}`);

describe.skipIf(!redisTool.path)("filters kept in a real Redis, polled through several replicas", () => {
  let redis: RedisServer;
  const stores: SharedStore[] = [];
  const chain = new FakeChain();

  /** A replica's filters: its own connection to Redis, the same nodes. */
  function replica(): RedisFilters {
    const store = new SharedStore({
      url: redis.url,
      keyPrefix: `filters-${process.pid}:`,
      commandTimeoutMs: 1_000,
      registry: new Registry(),
      logger: silentLogger(),
    });
    stores.push(store);
    return new RedisFilters({
      store,
      network: "devnet",
      maxPerClient: 10,
      timeoutMs: 60_000,
      servedHead: () => chain.head,
      fetch: chain.fetch,
      getLogs: (request) => chain.fetch(request),
    });
  }
  const call = (method: string, params: unknown[] = []): JsonRpcRequest => ({
    jsonrpc: "2.0",
    id: 1,
    method,
    params,
  });

  beforeAll(async () => {
    redis = await startRedis();
    chain.mine(3);
  });

  afterAll(async () => {
    for (const store of stores) await store.close();
    await redis?.stop();
  });

  it("delivers every block once and in order to polls racing on three replicas", async () => {
    const replicas = [replica(), replica(), replica()];
    await waitFor(() => stores.every((s) => s.ready));
    const made = await replicas[0]!.answer(call("eth_newBlockFilter"), "c");
    const filter = (made as { result: string }).result;
    const start = chain.head;
    const delivered: string[] = [];
    for (let round = 0; round < 20; round++) {
      chain.mine(round % 3);
      // Every replica polls at once: only one may deliver each block.
      const answers = await Promise.all(
        replicas.map((r) => r.answer(call("eth_getFilterChanges", [filter]), "c")),
      );
      for (const answer of answers) {
        expect(answer).not.toHaveProperty("error");
        delivered.push(...((answer as { result: string[] }).result ?? []));
      }
    }
    const drained = await replicas[1]!.answer(call("eth_getFilterChanges", [filter]), "c");
    delivered.push(...(drained as { result: string[] }).result);
    expect(delivered).toEqual(chain.hashes.slice(start + 1));
  });

  it("resumes from the fork after a reorganisation: the new branch's blocks and logs", async () => {
    const [a, b] = [replica(), replica()];
    await waitFor(() => stores.every((s) => s.ready));
    const blocks = (await a.answer(call("eth_newBlockFilter"), "c")) as { result: string };
    const logs = (await a.answer(call("eth_newFilter", [{}]), "c")) as { result: string };
    chain.mine(3, "x");
    const before = chain.head;
    const firstBlocks = (await b.answer(call("eth_getFilterChanges", [blocks.result]), "c")) as {
      result: string[];
    };
    const firstLogs = (await a.answer(call("eth_getFilterChanges", [logs.result]), "c")) as {
      result: Array<{ data: string }>;
    };
    expect(firstBlocks.result).toEqual(chain.hashes.slice(before - 2));
    expect(firstLogs.result.map((l) => l.data)).toEqual(chain.hashes.slice(before - 2));
    // The last two blocks replaced by three of another branch.
    chain.reorg(before - 1, 3, "y");
    const newBranch = chain.hashes.slice(before - 1);
    expect((await a.answer(call("eth_getFilterChanges", [blocks.result]), "c")) as object).toMatchObject({
      result: newBranch,
    });
    const afterLogs = (await b.answer(call("eth_getFilterChanges", [logs.result]), "c")) as {
      result: Array<{ data: string }>;
    };
    expect(afterLogs.result.map((l) => l.data)).toEqual(newBranch);
  });

  it("caps a client's filters over the replicas and forgets uninstalled ones everywhere", async () => {
    const [a, b] = [replica(), replica()];
    await waitFor(() => stores.every((s) => s.ready));
    const ids: string[] = [];
    for (let i = 0; i < 12; i++) {
      const answer = (await (i % 2 ? a : b).answer(call("eth_newBlockFilter"), "capped")) as {
        result?: string;
        error?: { code: number };
      };
      if (answer.result) ids.push(answer.result);
      else expect(answer.error?.code).toBe(-32005);
    }
    expect(ids).toHaveLength(10);
    expect(await a.answer(call("eth_uninstallFilter", [ids[0]]), "capped")).toMatchObject({ result: true });
    expect(await b.answer(call("eth_uninstallFilter", [ids[0]]), "capped")).toMatchObject({ result: false });
    expect(await b.answer(call("eth_getFilterChanges", [ids[0]]), "capped")).toMatchObject({
      error: { code: -32000, message: "filter not found" },
    });
    expect(await b.answer(call("eth_newBlockFilter"), "capped")).toHaveProperty("result");
  });
});
