import { describe, expect, it } from "vitest";
import { BlockLog, nextTimestamp } from "../../src/devnet/blockLog.js";

const GENESIS = 1_700_000_000;
const at = (second: number) => (GENESIS + second) * 1000 + 250;

describe("BlockLog", () => {
  it("stamps blocks with the wall-clock second, never below the parent's", () => {
    expect(nextTimestamp(GENESIS, at(5))).toBe(GENESIS + 5);
    expect(nextTimestamp(GENESIS + 9, at(5))).toBe(GENESIS + 9);
    const log = new BlockLog(GENESIS);
    expect(log.append(at(-10)).timestamp).toBe(GENESIS);
    expect(log.append(at(3)).timestamp).toBe(GENESIS + 3);
    expect(log.height).toBe(2);
  });

  it("puts queued transactions into the next block only", () => {
    const log = new BlockLog(GENESIS);
    log.addTransaction("0xaa");
    log.addTransaction("0xbb");
    expect(log.append(at(1)).rawTransactions).toEqual(["0xaa", "0xbb"]);
    expect(log.append(at(2)).rawTransactions).toEqual([]);
    expect(log.pendingTransactions).toEqual([]);
  });

  it("replays empty blocks of one second with one mine call and blocks with transactions on their own", () => {
    const log = new BlockLog(GENESIS);
    log.append(at(1));
    log.append(at(1));
    log.append(at(1));
    log.addTransaction("0xaa");
    log.append(at(1));
    log.append(at(1));
    log.append(at(2));
    expect(log.replaySteps(0, 6)).toEqual([
      { kind: "mine", timestamp: GENESIS + 1, blocks: 3 },
      { kind: "send", rawTransactions: ["0xaa"] },
      { kind: "mine", timestamp: GENESIS + 1, blocks: 1 },
      { kind: "mine", timestamp: GENESIS + 1, blocks: 1 },
      { kind: "mine", timestamp: GENESIS + 2, blocks: 1 },
    ]);
    expect(log.replaySteps(2, 3)).toEqual([{ kind: "mine", timestamp: GENESIS + 1, blocks: 1 }]);
    expect(log.replaySteps(6, 6)).toEqual([]);
    expect(log.replaySteps(5, 100)).toEqual([{ kind: "mine", timestamp: GENESIS + 2, blocks: 1 }]);
  });
});

describe("BlockLog.reorganise", () => {
  it("replaces the newest blocks by salted ones at the same heights, moving their transactions to the first", () => {
    const log = new BlockLog(GENESIS);
    log.append(at(1));
    log.addTransaction("0xaa");
    log.append(at(2));
    log.append(at(3));
    log.addTransaction("0xpending");
    expect(log.reorganise(2, at(4))).toBe(1);
    expect(log.height).toBe(3);
    expect(log.epoch).toBe(1);
    expect(log.block(1)).toEqual({ number: 1, timestamp: GENESIS + 1, rawTransactions: [] });
    expect(log.block(2)).toEqual({
      number: 2,
      timestamp: GENESIS + 4,
      rawTransactions: ["0xaa"],
      reorgSalt: 1,
    });
    expect(log.block(3)).toEqual({ number: 3, timestamp: GENESIS + 4, rawTransactions: [], reorgSalt: 1 });
    expect(log.pendingTransactions).toEqual(["0xpending"]);
    expect(log.replaySteps(1, 3)).toEqual([
      { kind: "salt", value: 1 },
      { kind: "send", rawTransactions: ["0xaa"] },
      { kind: "mine", timestamp: GENESIS + 4, blocks: 1 },
      { kind: "salt", value: 1 },
      { kind: "mine", timestamp: GENESIS + 4, blocks: 1 },
    ]);
  });

  it("tells a node last consistent at an epoch how far down its blocks still hold", () => {
    const log = new BlockLog(GENESIS);
    for (let i = 0; i < 10; i++) log.append(at(i));
    expect(log.forkPointSince(0)).toBeUndefined();
    log.reorganise(2, at(20));
    log.reorganise(5, at(21));
    log.reorganise(1, at(22));
    expect(log.forkPointSince(0)).toBe(5);
    expect(log.forkPointSince(2)).toBe(9);
    expect(log.forkPointSince(3)).toBeUndefined();
  });

  it("refuses depths beyond the chain", () => {
    const log = new BlockLog(GENESIS);
    log.append(at(1));
    expect(() => log.reorganise(2, at(2))).toThrow(/from 1 to the height 1/);
    expect(() => log.reorganise(0, at(2))).toThrow(RangeError);
  });
});
