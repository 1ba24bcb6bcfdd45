import { describe, expect, it } from "vitest";
import type { AnswerBlock, BlockStanding } from "../../src/gateway/rpc/responseCache.js";
import {
  ResponseCache,
  blockOfAnswer,
  blockStanding,
  cachePlan,
} from "../../src/gateway/rpc/responseCache.js";

const HASH = `0x${"ab".repeat(32)}`;
const OTHER = `0x${"cd".repeat(32)}`;
const ACCOUNT = "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266";
const call = (method: string, params: unknown[]) => ({ jsonrpc: "2.0" as const, id: 1, method, params });
const plan = (method: string, params: unknown[], finalized: number | undefined) =>
  cachePlan(call(method, params), call(method, params), finalized);

describe("what may be cached", () => {
  it("blocks and their contents by hash, transactions and receipts by hash, state at a block hash", () => {
    expect(plan("eth_getBlockByHash", [HASH, false], undefined)?.block).toEqual({ hash: HASH });
    expect(plan("eth_getTransactionByBlockHashAndIndex", [HASH, "0x0"], undefined)?.block).toEqual({
      hash: HASH,
    });
    expect(plan("eth_getTransactionReceipt", [HASH], undefined)?.block).toBe("inResult");
    expect(plan("eth_getTransactionByHash", [HASH], undefined)?.block).toBe("inResult");
    expect(plan("eth_call", [{ to: ACCOUNT }, { blockHash: HASH }], undefined)?.block).toEqual({
      hash: HASH,
    });
    expect(plan("eth_getBalance", [ACCOUNT, HASH], undefined)?.block).toEqual({ hash: HASH });
  });

  it("by number only at or below the finalized block, never by tag, never without finality", () => {
    expect(plan("eth_getBlockByNumber", ["0x10", false], 16)?.block).toEqual({ number: 16 });
    expect(plan("eth_getBlockReceipts", ["0x10"], 20)?.block).toEqual({ number: 16 });
    expect(plan("eth_getBalance", [ACCOUNT, { blockNumber: "0x5" }], 16)?.block).toEqual({ number: 5 });
    expect(plan("eth_getBlockByNumber", ["0x11", false], 16)).toBeUndefined();
    expect(plan("eth_getBlockByNumber", ["0x10", false], undefined)).toBeUndefined();
    for (const tag of ["latest", "safe", "finalized", "pending", "earliest"])
      expect(plan("eth_getBlockByNumber", [tag, false], 1_000), tag).toBeUndefined();
    expect(plan("eth_getBalance", [ACCOUNT, { blockNumber: "latest" }], 1_000)).toBeUndefined();
    expect(plan("eth_getBalance", [ACCOUNT], 1_000)).toBeUndefined();
    expect(plan("eth_getLogs", [{ fromBlock: "0x1", toBlock: "0x2" }], 1_000)).toBeUndefined();
    expect(plan("eth_gasPrice", [], 1_000)).toBeUndefined();
    expect(plan("eth_getTransactionReceipt", ["0x12"], 1_000)).toBeUndefined();
  });

  it("keys on the call as forwarded, so equal calls share an entry and others do not", () => {
    expect(plan("eth_getBlockByHash", [HASH, false], undefined)?.key).not.toBe(
      plan("eth_getBlockByHash", [HASH, true], undefined)?.key,
    );
    expect(plan("eth_getBlockByHash", [HASH, true], undefined)?.key).toBe(
      plan("eth_getBlockByHash", [HASH, true], 3)?.key,
    );
  });

  it("reads the block of a transaction or receipt answer; a pending one has none", () => {
    expect(blockOfAnswer({ blockHash: HASH, blockNumber: "0x7", status: "0x1" })).toEqual({
      hash: HASH,
      number: 7,
    });
    expect(blockOfAnswer({ blockHash: null, blockNumber: null })).toBeUndefined();
    expect(blockOfAnswer(null)).toBeUndefined();
  });
});

describe("block standing", () => {
  const held = (map: Record<string, number>) => (hash: string) => map[hash];
  it("a hash stands while a routed node's chain holds it; final once at or below the finalized block", () => {
    expect(blockStanding({ hash: HASH }, undefined, held({ [HASH]: 9 }))).toBe("current");
    expect(blockStanding({ hash: HASH }, 9, held({ [HASH]: 9 }))).toBe("final");
    expect(blockStanding({ hash: HASH, number: 9 }, 20, held({}))).toBe("unknown");
    expect(blockStanding({ number: 9 }, 9, held({}))).toBe("final");
    expect(blockStanding({ number: 10 }, 9, held({}))).toBe("unknown");
    expect(blockStanding({ number: 1 }, undefined, held({}))).toBe("unknown");
  });
});

describe("ResponseCache", () => {
  /** A cache whose blocks stand as the test says. */
  function cache(maxBytes = 1_000_000, maxEntryBytes = 100_000) {
    const standings = new Map<string, BlockStanding>();
    const asked: AnswerBlock[] = [];
    const c = new ResponseCache({ maxBytes, maxEntryBytes }, (block) => {
      asked.push(block);
      return standings.get(block.hash ?? String(block.number)) ?? "unknown";
    });
    return { c, standings, asked };
  }

  it("serves an entry only while its block stands, and drops it for good once it does not (a reorg)", () => {
    const { c, standings } = cache();
    c.set("k", '{"hash":1}', { hash: HASH });
    expect(c.get("k")).toBeUndefined();
    standings.set(HASH, "current");
    c.set("k", '{"hash":1}', { hash: HASH });
    expect(c.get("k")).toBe('{"hash":1}');
    standings.set(HASH, "unknown");
    expect(c.get("k")).toBeUndefined();
    standings.set(HASH, "current");
    expect(c.get("k")).toBeUndefined();
  });

  it("an entry once final is served without asking again", () => {
    const { c, standings, asked } = cache();
    standings.set(OTHER, "final");
    c.set("k", "1", { hash: OTHER });
    standings.delete(OTHER);
    asked.length = 0;
    expect(c.get("k")).toBe("1");
    expect(asked).toEqual([]);
  });

  it("is bounded in bytes: the least recently used go first, and a too large answer is not kept", () => {
    const { c, standings } = cache(10_000, 2_000);
    standings.set("5", "final");
    const answer = "x".repeat(900);
    for (let i = 0; i < 20; i++) c.set(`key-${i}`, answer, { number: 5 });
    expect(c.bytes).toBeLessThanOrEqual(10_000);
    expect(c.get("key-19")).toBe(answer);
    expect(c.get("key-0")).toBeUndefined();
    c.set("big", "y".repeat(5_000), { number: 5 });
    expect(c.get("big")).toBeUndefined();
  });
});
