import { describe, expect, it } from "vitest";
import { HashingGate } from "../../src/keys/throttle/hashingGate.js";
import { RefusalMemo } from "../../src/keys/throttle/refusalMemo.js";
import { slowDownDelayMs } from "../../src/keys/throttle/slowDown.js";

describe("slowDownDelayMs", () => {
  const policy = { after: 10, baseDelayMs: 1_000, maxDelayMs: 30_000, windowMs: 900_000 };
  it("is nothing below the threshold, then doubles per failure up to the cap", () => {
    expect([0, 9, 10, 11, 12, 14, 15, 40, 10_000].map((n) => slowDownDelayMs(n, policy))).toEqual([
      0, 0, 1_000, 2_000, 4_000, 16_000, 30_000, 30_000, 30_000,
    ]);
  });
});

describe("HashingGate", () => {
  const limits = { perAccount: 2, perAddress: 1, total: 1, queue: 1, accountQueue: 0 };

  it("refuses a second check from one address, and a third on one account when its line is full", async () => {
    const gate = new HashingGate({ ...limits, total: 10 });
    const first = await gate.enter("acct", "1.1.1.1", false);
    expect("release" in first).toBe(true);
    expect(await gate.enter("acct", "1.1.1.1", false)).toEqual({ refused: "address" });
    const second = await gate.enter("acct", "2.2.2.2", false);
    expect(await gate.enter("acct", "3.3.3.3", false)).toEqual({ refused: "account" });
    // A trusted browser is not held to the per-account bound.
    const trusted = await gate.enter("acct", "4.4.4.4", true);
    expect("release" in trusted).toBe(true);
    if ("release" in trusted) trusted.release();
    if ("release" in first) first.release();
    expect("release" in (await gate.enter("acct", "1.1.1.1", false))).toBe(true);
    if ("release" in second) second.release();
  });

  it("queues beyond the total, refuses beyond the queue, and lets trusted browsers go first", async () => {
    const gate = new HashingGate({ perAccount: 10, perAddress: 10, total: 1, queue: 1, accountQueue: 0 });
    const running = await gate.enter("a", "1", false);
    const order: string[] = [];
    const untrusted = gate.enter("b", "2", false).then((slot) => {
      order.push("untrusted");
      return slot;
    });
    expect(await gate.enter("c", "3", false)).toEqual({ refused: "busy" });
    const trusted = gate.enter("d", "4", true).then((slot) => {
      order.push("trusted");
      return slot;
    });
    // Nothing moves until the running check ends.
    await Promise.resolve();
    expect(order).toEqual([]);
    if ("release" in running) running.release();
    const first = await trusted;
    expect(order).toEqual(["trusted"]);
    expect("release" in first).toBe(true);
    if ("release" in first) first.release();
    const second = await untrusted;
    expect(order).toEqual(["trusted", "untrusted"]);
    expect("release" in second).toBe(true);
    if ("release" in second) second.release();
  });
});

describe("HashingGate account line", () => {
  it("holds an attempt past the per-account bound until a check of that account ends, instead of refusing it", async () => {
    const gate = new HashingGate({ perAccount: 1, perAddress: 5, total: 5, queue: 5, accountQueue: 1 });
    const guesser = await gate.enter("acct", "1.1.1.1", false);
    let ownerIn = false;
    const owner = gate.enter("acct", "2.2.2.2", false).then((slot) => {
      ownerIn = true;
      return slot;
    });
    // A third waits for no line place: refused, while the owner's attempt waits.
    expect(await gate.enter("acct", "3.3.3.3", false)).toEqual({ refused: "account" });
    // Another account is not held up.
    const other = await gate.enter("other", "4.4.4.4", false);
    expect("release" in other).toBe(true);
    await Promise.resolve();
    expect(ownerIn).toBe(false);
    if ("release" in guesser) guesser.release();
    const slot = await owner;
    expect("release" in slot).toBe(true);
    // The slot was handed over: the account is at its bound again, so the next waits until the owner's check ends.
    let nextIn = false;
    const next = gate.enter("acct", "5.5.5.5", false).then((s) => {
      nextIn = true;
      return s;
    });
    await Promise.resolve();
    expect(nextIn).toBe(false);
    if ("release" in slot) slot.release();
    const after = await next;
    expect("release" in after).toBe(true);
    if ("release" in after) after.release();
    if ("release" in other) other.release();
  });
});

describe("RefusalMemo", () => {
  it("remembers a refusal until it ends, and says which refusal starts a block", () => {
    const memo = new RefusalMemo(2);
    expect(memo.remember("k", 1_000, 0)).toBe(true);
    expect(memo.remember("k", 1_000, 10)).toBe(false);
    expect(memo.remaining("k", 400)).toBe(600);
    expect(memo.remaining("k", 1_000)).toBe(0);
    expect(memo.remember("k", 2_000, 1_000)).toBe(true);
    // Bounded: a third key makes room by forgetting the oldest.
    memo.remember("a", 5_000, 1_000);
    memo.remember("b", 5_000, 1_000);
    expect(memo.remaining("k", 1_500)).toBe(0);
    expect(memo.remaining("b", 1_500)).toBe(3_500);
  });
});
