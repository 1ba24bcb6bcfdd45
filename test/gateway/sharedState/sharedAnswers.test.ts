import { Redis } from "ioredis";
import { Registry } from "prom-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Gateway } from "../../../src/gateway/gateway.js";
import {
  RedisAnswers,
  decodeSharedAnswer,
  encodeSharedAnswer,
} from "../../../src/gateway/sharedState/redisAnswers.js";
import { SharedStore } from "../../../src/gateway/sharedState/sharedStore.js";
import { silentLogger } from "../../../src/log/logger.js";
import { HttpRpcClient } from "../../../src/rpc/httpRpcClient.js";
import { startTestDevnet } from "../../support/devnet.js";
import type { Devnet } from "../../../src/devnet/devnet.js";
import { redisTool, startRedis } from "../../support/redisServer.js";
import type { RedisServer } from "../../support/redisServer.js";
import { waitFor } from "../../support/waitFor.js";
import { CHAIN_ID, NETWORK, post, startTestGateway, waitForServedHead } from "../support.js";
import type { Json } from "../support.js";

const HASH = `0x${"ab".repeat(32)}`;

describe("a shared answer as kept in Redis", () => {
  it("keeps its block's height and hash beside the result", () => {
    for (const block of [{ number: 7, hash: HASH }, { number: 7 }, { hash: HASH }]) {
      const answer = { json: '{"number":"0x7"}', block };
      expect(decodeSharedAnswer(encodeSharedAnswer(answer))).toEqual(answer);
    }
  });

  it("is never read from text something else wrote", () => {
    for (const text of ["", "hello", ` \n{}`, `7 ${HASH}\n`, `x ${HASH}\n{}`, `7 0x12\n{}`, `-1 \n{}`])
      expect(decodeSharedAnswer(text), JSON.stringify(text)).toBeUndefined();
  });
});

if (!redisTool.path) console.warn(`skipping the shared response cache tests: ${redisTool.missing}`);

async function cacheCount(registry: Registry, result: "hit" | "shared_hit" | "miss"): Promise<number> {
  const values =
    (await registry.getSingleMetric("lightfleet_gateway_cache_requests_total")?.get())?.values ?? [];
  return values.filter((v) => v.labels.result === result).reduce((sum, v) => sum + v.value, 0);
}

async function upstreamCalls(registry: Registry): Promise<number> {
  const values =
    (await registry.getSingleMetric("lightfleet_gateway_upstream_requests_total")?.get())?.values ?? [];
  return values.reduce((sum, v) => sum + v.value, 0);
}

/** Two replicas over one devnet's nodes and one Redis, as two gateway pods behind a Service. */
describe.skipIf(!redisTool.path)("the response cache shared by replicas through Redis", () => {
  let redis: RedisServer;
  let devnet: Devnet;
  let client: Redis;
  const replicas: Array<{ gateway: Gateway; registry: Registry }> = [];
  const keyPrefix = `lightfleet-test-${process.pid}:`;
  /** The answers kept in Redis so far. */
  const sharedKeys = () => client.keys(`${keyPrefix}cache:*`);

  beforeAll(async () => {
    redis = await startRedis();
    client = new Redis(redis.url);
    devnet = await startTestDevnet({
      networks: [{ name: NETWORK, chainId: CHAIN_ID, fullNodes: 1, lightNodes: 2 }],
    });
    // anvil's finalized block is 64 below its head: 6 at head 70; every block is on the nodes' recent chains.
    for (let i = 0; i < 70; i++) await devnet.mine(NETWORK);
    for (let i = 0; i < 2; i++) {
      const replica = await startTestGateway(devnet, {
        sharedState: { backend: "redis", url: redis.url, keyPrefix },
      });
      replicas.push(replica);
    }
    // Blocks both replicas see as heads: 71 to 140, final up to 76.
    for (let i = 0; i < 70; i++) await devnet.mine(NETWORK);
    for (const [i, replica] of replicas.entries()) {
      await waitForServedHead(replica.gateway, devnet);
      await waitFor(() => (replica.gateway.blockTags(NETWORK).finalized?.number ?? 0) >= 76, {
        what: `replica ${i}'s agreed finalized block`,
      });
    }
  }, 120_000);

  afterAll(async () => {
    for (const { gateway } of replicas) await gateway.stop();
    client?.disconnect();
    await redis?.stop();
  });

  const ask = async (replica: { gateway: Gateway }, method: string, params: unknown[]): Promise<Json> =>
    (await post(replica.gateway.url, { jsonrpc: "2.0", id: 9, method, params })).body;

  /** Replica a fetches a block; b serves it from Redis once it finds it final by its own nodes' chain. */
  const shareBlock = async (height: number) => {
    const [a, b] = replicas as [(typeof replicas)[0], (typeof replicas)[0]];
    const full = new HttpRpcClient(devnet.nodes(NETWORK).find((n) => n.role === "full")!.httpUrl, 5_000);
    const block = await full.call<Json>("eth_getBlockByNumber", [`0x${height.toString(16)}`, false]);
    const keysBefore = (await sharedKeys()).length;
    await waitFor(
      async () => {
        expect((await ask(a, "eth_getBlockByHash", [block.hash, false])).result).toEqual(block);
        return (await sharedKeys()).length > keysBefore;
      },
      { what: "replica a's answer kept in Redis" },
    );
    const calls = await upstreamCalls(b.registry);
    const sharedHits = await cacheCount(b.registry, "shared_hit");
    expect(await ask(b, "eth_getBlockByHash", [block.hash, false])).toEqual({
      jsonrpc: "2.0",
      id: 9,
      result: block,
    });
    expect(await cacheCount(b.registry, "shared_hit")).toBe(sharedHits + 1);
    // Kept by b itself from then on: a hit of its own, no Redis read.
    const hits = await cacheCount(b.registry, "hit");
    expect((await ask(b, "eth_getBlockByHash", [block.hash, false])).result).toEqual(block);
    expect(await cacheCount(b.registry, "hit")).toBe(hits + 1);
    expect(await cacheCount(b.registry, "shared_hit")).toBe(sharedHits + 1);
    return { calls: (await upstreamCalls(b.registry)) - calls };
  };

  it("serves a finalized block another replica fetched, without asking a node", async () => {
    // On both replicas' recent chains and final: served from Redis at the first call.
    expect((await shareBlock(72)).calls).toBe(0);
  });

  it("serves a finalized block older than the nodes' recent chains once it checked the canonical hash there", async () => {
    // Block 3 came before the replicas started: each checks the canonical hash at height 3 with its nodes first (a
    // shared answer is never taken on another replica's word).
    expect((await shareBlock(3)).calls).toBeGreaterThan(0);
  });

  it("shares no answer about a block not final yet", async () => {
    const [a] = replicas;
    const head = devnet.head(NETWORK).number;
    const keysBefore = (await sharedKeys()).length;
    const hits = await cacheCount(a!.registry, "hit");
    const latest = (await ask(a!, "eth_getBlockByNumber", [`0x${head.toString(16)}`, false])).result;
    // Asked twice: the second is a hit, so the first answer was kept (in process only).
    expect((await ask(a!, "eth_getBlockByHash", [latest.hash, false])).result).toEqual(latest);
    expect((await ask(a!, "eth_getBlockByHash", [latest.hash, false])).result).toEqual(latest);
    expect(await cacheCount(a!.registry, "hit")).toBe(hits + 1);
    expect((await sharedKeys()).length).toBe(keysBefore);
  });

  it("never serves a shared answer whose block is not the chain's canonical one at a final height", async () => {
    const [, b] = replicas;
    // An answer in Redis about a block at final height 4 that no node's chain has: from a branch a reorg replaced.
    const store = new SharedStore({
      url: redis.url,
      keyPrefix,
      commandTimeoutMs: 1_000,
      registry: new Registry(),
      logger: silentLogger(),
    });
    try {
      await waitFor(() => store.ready, { what: "the test's connection to Redis" });
      const answers = new RedisAnswers({ store, network: NETWORK, ttlMs: 60_000 });
      const keysBefore = (await sharedKeys()).length;
      answers.put(`eth_getBlockByHash\n["${HASH}",false]`, {
        json: `{"hash":"${HASH}","number":"0x4"}`,
        block: { number: 4, hash: HASH },
      });
      await waitFor(async () => (await sharedKeys()).length > keysBefore, {
        what: "the planted answer in Redis",
      });
      const sharedHits = await cacheCount(b!.registry, "shared_hit");
      // Asked again and again (the canonical hash at height 4 is learnt in between): never the planted answer.
      for (let i = 0; i < 5; i++)
        expect((await ask(b!, "eth_getBlockByHash", [HASH, false])).result, `call ${i}`).toBeNull();
      expect(await cacheCount(b!.registry, "shared_hit")).toBe(sharedHits);
    } finally {
      await store.close();
    }
  });
});
