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
