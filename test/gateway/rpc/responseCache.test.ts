import { describe, expect, it } from "vitest";
import type { AnswerBlock, BlockStanding } from "../../../src/gateway/rpc/responseCache.js";
import {
  ResponseCache,
  blockOfAnswer,
  blockStanding,
  cachePlan,
  hashKey,
  withNumberFromAnswer,
} from "../../../src/gateway/rpc/responseCache.js";

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
  const canonical = (map: Record<number, string>) => (number: number) => map[number];
  const none = canonical({});
  it("a hash stands while a routed node's chain holds it; final once at or below the finalized block", () => {
    expect(blockStanding({ hash: HASH }, undefined, held({ [HASH]: 9 }), none)).toBe("current");
    expect(blockStanding({ hash: HASH }, 9, held({ [HASH]: 9 }), none)).toBe("final");
    expect(blockStanding({ hash: HASH, number: 9 }, 8, held({}), none)).toBe("unknown");
    expect(blockStanding({ number: 9 }, 9, held({}), none)).toBe("final");
    expect(blockStanding({ number: 10 }, 9, held({}), none)).toBe("unknown");
    expect(blockStanding({ number: 1 }, undefined, held({}), none)).toBe("unknown");
  });

  it("a hash off the recent chains at a final height is final only as the canonical hash there", () => {
    // Not known yet: kept, not served, until the canonical hash is known.
    expect(blockStanding({ hash: HASH, number: 1 }, 6, held({}), none)).toBe("unverified");
    expect(blockStanding({ hash: HASH, number: 1 }, 6, held({}), canonical({ 1: HASH }))).toBe("final");
    expect(blockStanding({ hash: HASH, number: 6 }, 6, held({}), canonical({ 6: HASH }))).toBe("final");
    // Another block at that height (a branch a reorg replaced): never served.
    expect(blockStanding({ hash: HASH, number: 1 }, 6, held({}), canonical({ 1: OTHER }))).toBe("unknown");
    // Above the finalized block, without finality, or without a height: nothing to check against.
    expect(blockStanding({ hash: HASH, number: 7 }, 6, held({}), canonical({ 7: HASH }))).toBe("unknown");
    expect(blockStanding({ hash: HASH, number: 1 }, undefined, held({}), canonical({ 1: HASH }))).toBe(
      "unknown",
    );
    expect(blockStanding({ hash: HASH }, 6, held({}), canonical({ 1: HASH }))).toBe("unknown");
  });

  it("reads the height of a block named by hash from the answer about it", () => {
    expect(withNumberFromAnswer({ hash: HASH }, { hash: HASH, number: "0x1", parentHash: OTHER })).toEqual({
      hash: HASH,
      number: 1,
    });
    expect(
      withNumberFromAnswer({ hash: HASH }, { hash: OTHER, blockHash: HASH, blockNumber: "0x2" }),
    ).toEqual({
      hash: HASH,
      number: 2,
    });
    expect(withNumberFromAnswer({ hash: HASH }, [{ blockHash: HASH, blockNumber: "0x3" }])).toEqual({
      hash: HASH,
      number: 3,
    });
    // An answer about another block, or with no height, says nothing.
    expect(withNumberFromAnswer({ hash: HASH }, { hash: OTHER, number: "0x1" })).toEqual({ hash: HASH });
    expect(withNumberFromAnswer({ hash: HASH }, "0x5")).toEqual({ hash: HASH });
    expect(withNumberFromAnswer({ hash: HASH }, { hash: HASH, number: "5" })).toEqual({ hash: HASH });
  });
});

describe("ResponseCache", () => {
  /** A cache whose blocks stand as the test says. */
  function cache(maxBytes = 1_000_000, maxEntryBytes = 100_000) {
    const standings = new Map<string, BlockStanding>();
    const asked: AnswerBlock[] = [];
    const final: string[] = [];
    const c = new ResponseCache(
      { maxBytes, maxEntryBytes },
      (block) => {
        asked.push(block);
        return standings.get(block.hash ?? String(block.number)) ?? "unknown";
      },
      (key, json) => final.push(`${key}=${json}`),
    );
    return { c, standings, asked, final };
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

  it("keeps an unverified entry without serving it, and serves it once final", () => {
    const { c, standings } = cache();
    standings.set(HASH, "unverified");
    c.set("k", "1", { hash: HASH, number: 1 });
    expect(c.get("k")).toBeUndefined();
    expect(c.size).toBe(1);
    standings.set(HASH, "final");
    expect(c.get("k")).toBe("1");
  });

  it("says where a kept entry's block stands, and tells once of an entry that turned final after", () => {
    const { c, standings, final } = cache();
    standings.set(OTHER, "final");
    expect(c.set("a", "1", { hash: OTHER })).toBe("final");
    standings.set(HASH, "unverified");
    expect(c.set("b", "2", { hash: HASH, number: 1 })).toBe("unverified");
    expect(c.set("c", "3", { number: 99 })).toBe("unknown");
    expect(c.get("b")).toBeUndefined();
    expect(final).toEqual([]);
    standings.set(HASH, "final");
    expect(c.get("b")).toBe("2");
    expect(c.get("b")).toBe("2");
    // Only the entry that turned final on a look-up (one final when kept is told by set's result).
    expect(final).toEqual(["b=2"]);
  });

  it("drops an unverified entry whose hash is not the canonical one", () => {
    const { c, standings } = cache();
    standings.set(HASH, "unverified");
    c.set("k", "1", { hash: HASH, number: 1 });
    standings.set(HASH, "unknown");
    expect(c.get("k")).toBeUndefined();
    expect(c.size).toBe(0);
    standings.set(HASH, "final");
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
    expect(c.holds("big")).toBe(false);
    expect(c.holds("key-19")).toBe(true);
  });

  describe("a call named by a hash, looked up by it", () => {
    /** Keeps the call's answer as the gateway does (by its plan), standing final. */
    function kept(c: ResponseCache, method: string, params: unknown[], json: string) {
      const p = plan(method, params, undefined)!;
      c.set(p.key, json, { hash: HASH }, p.lookup);
    }
    const found = (c: ResponseCache, method: string, params: unknown[]) =>
      c.find(plan(method, params, undefined)!)?.json;

    it("finds the same call, and only it: other flags, methods, hashes and letter cases are other entries", () => {
      const { c, standings } = cache();
      standings.set(HASH, "final");
      standings.set(OTHER, "final");
      kept(c, "eth_getBlockByHash", [HASH, false], "1");
      kept(c, "eth_getBlockByHash", [HASH, true], "2");
      kept(c, "eth_getBlockReceipts", [HASH], "3");
      kept(c, "eth_getBalance", [ACCOUNT, HASH], "4");
      expect(plan("eth_getBlockByHash", [HASH, false], undefined)?.lookup).toBeDefined();
      expect(found(c, "eth_getBlockByHash", [HASH, false])).toBe("1");
      expect(found(c, "eth_getBlockByHash", [HASH, true])).toBe("2");
      expect(found(c, "eth_getBlockReceipts", [HASH])).toBe("3");
      expect(found(c, "eth_getBalance", [ACCOUNT, HASH])).toBe("4");
      expect(found(c, "eth_getBalance", [ACCOUNT.replace("f39", "f38"), HASH])).toBeUndefined();
      expect(found(c, "eth_getTransactionCount", [ACCOUNT, HASH])).toBeUndefined();
      expect(found(c, "eth_getBlockByHash", [OTHER, false])).toBeUndefined();
      expect(found(c, "eth_getBlockByHash", [HASH.toUpperCase().replace("0X", "0x"), false])).toBeUndefined();
      // EIP-1898's object form is found by its key.
      const byObject = plan("eth_call", [{ to: ACCOUNT }, { blockHash: HASH }], undefined)!;
      expect(byObject.lookup).toBeUndefined();
      c.set(byObject.key, "5", { hash: HASH }, byObject.lookup);
      expect(found(c, "eth_call", [{ to: ACCOUNT }, { blockHash: HASH }])).toBe("5");
      expect(found(c, "eth_call", [{ to: OTHER.slice(0, 42) }, { blockHash: HASH }])).toBeUndefined();
      // The same entries by their keys.
      expect(c.get(plan("eth_getBlockByHash", [HASH, true], undefined)!.key)).toBe("2");
    });

    it("answers any call naming a final entry by its hash with the same values, with no check, while it is kept", () => {
      const { c, standings, asked } = cache(2_000, 1_000);
      const hit = (method: string, params: unknown[]) => c.finalHit(call(method, params))?.json;
      standings.set(HASH, "final");
      standings.set(OTHER, "current");
      kept(c, "eth_getBlockByHash", [HASH, false], "1");
      kept(c, "eth_getBlockByHash", [HASH, true], "2");
      kept(c, "eth_getBalance", [ACCOUNT, HASH], "4");
      // Calls in turn, as clients make them: each one found, none of them planned, keyed or its block checked again.
      const checked = asked.length;
      for (let i = 0; i < 3; i++) {
        expect(hit("eth_getBlockByHash", [HASH, false])).toBe("1");
        expect(hit("eth_getBalance", [ACCOUNT, HASH])).toBe("4");
        expect(hit("eth_getBlockByHash", [`${HASH}`, true])).toBe("2");
      }
      expect(asked.length).toBe(checked);
      for (const [method, params] of [
        ["eth_getBlockByHash", [HASH]],
        ["eth_getBlockByHash", [HASH, false, 1]],
        ["eth_getBlockByHash", [HASH, 0]],
        ["eth_getBlockByHash", [HASH.toUpperCase().replace("0X", "0x"), false]],
        ["eth_getBlockByHash", [OTHER, false]],
        ["eth_getBlockByHash", [{ hash: HASH }, false]],
        ["eth_getBlockTransactionCountByHash", [HASH]],
        ["eth_getBalance", [ACCOUNT.toUpperCase(), HASH]],
        ["eth_getBalance", [HASH, ACCOUNT]],
      ] as const)
        expect(hit(method, [...params]), `${method} ${JSON.stringify(params)}`).toBeUndefined();
      expect(
        c.finalHit({ jsonrpc: "2.0", id: 1, method: "eth_getBlockByHash", params: { hash: HASH } }),
      ).toBe(undefined);
      // Replaced: the new entry is the one answered.
      kept(c, "eth_getBalance", [ACCOUNT, HASH], "5");
      expect(hit("eth_getBalance", [ACCOUNT, HASH])).toBe("5");
      // Evicted: not answered.
      for (let i = 0; i < 4; i++)
        kept(c, "eth_getTransactionCount", [ACCOUNT.replace("f", String(i)), HASH], "6".repeat(250));
      expect(c.holds(plan("eth_getBalance", [ACCOUNT, HASH], undefined)!.key)).toBe(false);
      expect(hit("eth_getBalance", [ACCOUNT, HASH])).toBeUndefined();
      // An entry not final yet is left to find, which checks its block on every look-up; once final, it is answered.
      const p = plan("eth_getBlockByHash", [OTHER, false], undefined)!;
      c.set(p.key, "7", { hash: OTHER }, p.lookup);
      expect(hit("eth_getBlockByHash", [OTHER, false])).toBeUndefined();
      expect(c.find(plan("eth_getBlockByHash", [OTHER, false], undefined)!)?.json).toBe("7");
      expect(hit("eth_getBlockByHash", [OTHER, false])).toBeUndefined();
      standings.set(OTHER, "final");
      expect(c.find(plan("eth_getBlockByHash", [OTHER, false], undefined)!)?.json).toBe("7");
      expect(hit("eth_getBlockByHash", [OTHER, false])).toBe("7");
    });

    it("tells apart hashes that share the index's key, each found and answered as its own", () => {
      const { c, standings } = cache();
      // The same last seven characters as HASH; and HASH with its last letter in capitals (the same low bits).
      const sameTail = `0x${"cd".repeat(28)}${"ab".repeat(4)}`;
      const capital = `${HASH.slice(0, -1)}B`;
      expect(hashKey(sameTail)).toBe(hashKey(HASH));
      expect(hashKey(capital)).toBe(hashKey(HASH));
      for (const [hash, json] of [
        [HASH, "1"],
        [sameTail, "2"],
        [capital, "3"],
      ] as const) {
        standings.set(hash.toLowerCase(), "final");
        const p = plan("eth_getBlockByHash", [hash, false], undefined)!;
        c.set(p.key, json, { hash: hash.toLowerCase() }, p.lookup);
      }
      const hit = (hash: string) => c.finalHit(call("eth_getBlockByHash", [hash, false]))?.json;
      for (let i = 0; i < 2; i++) {
        expect(found(c, "eth_getBlockByHash", [HASH, false])).toBe("1");
        expect(found(c, "eth_getBlockByHash", [sameTail, false])).toBe("2");
        expect(found(c, "eth_getBlockByHash", [capital, false])).toBe("3");
        expect([hit(HASH), hit(sameTail), hit(capital)]).toEqual(["1", "2", "3"]);
      }
      expect(c.looksUp).toBe(3);
      // An entry of the same key not final yet, then reorged away: dropped from the index, the others still found.
      standings.set(sameTail, "current");
      const p = plan("eth_getBlockByHash", [sameTail, true], undefined)!;
      c.set(p.key, "4", { hash: sameTail }, p.lookup);
      expect(c.looksUp).toBe(4);
      expect(found(c, "eth_getBlockByHash", [sameTail, true])).toBe("4");
      standings.set(sameTail, "unknown");
      expect(found(c, "eth_getBlockByHash", [sameTail, true])).toBeUndefined();
      expect(c.looksUp).toBe(3);
      expect([hit(HASH), hit(sameTail), hit(capital)]).toEqual(["1", "2", "3"]);
    });

    it("leaves the look-up with the entry: evicted, replaced, dropped after a reorg, never kept", () => {
      const { c, standings } = cache(2_000, 1_000);
      standings.set(HASH, "current");
      kept(c, "eth_getBlockByHash", [HASH, false], "1");
      kept(c, "eth_getBlockByHash", [HASH, false], "9");
      expect(found(c, "eth_getBlockByHash", [HASH, false])).toBe("9");
      expect(c.size).toBe(1);
      expect(c.looksUp).toBe(1);
      // A reorg: the entry is dropped, and not found again once its block stands again.
      standings.set(HASH, "unknown");
      expect(found(c, "eth_getBlockByHash", [HASH, false])).toBeUndefined();
      standings.set(HASH, "current");
      expect(found(c, "eth_getBlockByHash", [HASH, false])).toBeUndefined();
      expect(c.looksUp).toBe(0);
      // Too large to keep: not found.
      kept(c, "eth_getBlockByHash", [HASH, true], "x".repeat(600));
      expect(found(c, "eth_getBlockByHash", [HASH, true])).toBeUndefined();
      expect(c.looksUp).toBe(0);
      // Evicted by others: not found; the most recently found stays.
      kept(c, "eth_getBlockByHash", [HASH, false], "1");
      kept(c, "eth_getBlockReceipts", [HASH], "2".repeat(300));
      expect(found(c, "eth_getBlockByHash", [HASH, false])).toBe("1");
      kept(c, "eth_getBalance", [ACCOUNT, HASH], "3".repeat(300));
      kept(c, "eth_getTransactionCount", [ACCOUNT, HASH], "4".repeat(300));
      expect(found(c, "eth_getBlockReceipts", [HASH])).toBeUndefined();
      expect(found(c, "eth_getBlockByHash", [HASH, false])).toBe("1");
      expect(c.holds(plan("eth_getBlockReceipts", [HASH], undefined)!.key)).toBe(false);
      expect(c.looksUp).toBe(c.size);
    });
  });
});
