import { describe, expect, it } from "vitest";
import {
  HashingGate,
  NEWEST_FIRST_AFTER_NETWORKS,
  networkOf,
} from "../../../src/keys/throttle/hashingGate.js";
import { RefusalMemo } from "../../../src/keys/throttle/refusalMemo.js";
import { slowDownDelayMs } from "../../../src/keys/throttle/slowDown.js";

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
    const first = await gate.enter("acct", "1.1.1.1", "other");
    expect("release" in first).toBe(true);
    expect(await gate.enter("acct", "1.1.1.1", "other")).toEqual({ refused: "address" });
    const second = await gate.enter("acct", "2.2.2.2", "other");
    expect(await gate.enter("acct", "3.3.3.3", "other")).toEqual({ refused: "account" });
    // A trusted browser is not held to the per-account bound.
    const trusted = await gate.enter("acct", "4.4.4.4", "device");
    expect("release" in trusted).toBe(true);
    if ("release" in trusted) trusted.release();
    if ("release" in first) first.release();
    expect("release" in (await gate.enter("acct", "1.1.1.1", "other"))).toBe(true);
    if ("release" in second) second.release();
  });

  it("queues beyond the total, refuses beyond the queue, and keeps one check and the front of the queue for trusted browsers", async () => {
    const gate = new HashingGate({ perAccount: 10, perAddress: 10, total: 1, queue: 1, accountQueue: 0 });
    const running = await gate.enter("a", "1", "other");
    const order: string[] = [];
    const untrusted = gate.enter("b", "2", "other").then((slot) => {
      order.push("untrusted");
      return slot;
    });
    expect(await gate.enter("c", "3", "other")).toEqual({ refused: "busy" });
    // A browser with the device cookie runs at once beside the guess's check: one check is kept for it.
    const reserved = await gate.enter("d", "4", "device");
    expect("release" in reserved).toBe(true);
    const trusted = gate.enter("e", "5", "device").then((slot) => {
      order.push("trusted");
      return slot;
    });
    // Nothing else moves until a running check ends.
    await Promise.resolve();
    expect(order).toEqual([]);
    if ("release" in running) running.release();
    const first = await trusted;
    expect(order).toEqual(["trusted"]);
    expect("release" in first).toBe(true);
    // Past the total, a slot freed is not handed to an untrusted attempt.
    if ("release" in first) first.release();
    await new Promise((resolve) => setImmediate(resolve));
    expect(order).toEqual(["trusted"]);
    if ("release" in reserved) reserved.release();
    const second = await untrusted;
    expect(order).toEqual(["trusted", "untrusted"]);
    expect("release" in second).toBe(true);
    if ("release" in second) second.release();
  });
});

describe("HashingGate account line", () => {
  it("holds an attempt past the per-account bound until a check of that account ends, instead of refusing it", async () => {
    const gate = new HashingGate({ perAccount: 1, perAddress: 5, total: 5, queue: 5, accountQueue: 1 });
    const guesser = await gate.enter("acct", "1.1.1.1", "other");
    let ownerIn = false;
    const owner = gate.enter("acct", "2.2.2.2", "other").then((slot) => {
      ownerIn = true;
      return slot;
    });
    // A third waits for no line place: refused, while the owner's attempt waits.
    expect(await gate.enter("acct", "3.3.3.3", "other")).toEqual({ refused: "account" });
    // Another account is not held up.
    const other = await gate.enter("other", "4.4.4.4", "other");
    expect("release" in other).toBe(true);
    await Promise.resolve();
    expect(ownerIn).toBe(false);
    if ("release" in guesser) guesser.release();
    const slot = await owner;
    expect("release" in slot).toBe(true);
    // The slot was handed over: the account is at its bound again, so the next waits until the owner's check ends.
    let nextIn = false;
    const next = gate.enter("acct", "5.5.5.5", "other").then((s) => {
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

/**
 * One account's line with one check running (10.0.0.1's): `enter` queues an attempt, `nextCheck` ends the check in
 * progress so the account's slot passes to the next in line, `order` lists who got a turn.
 */
async function accountLine() {
  const gate = new HashingGate({ perAccount: 1, perAddress: 5, total: 5, queue: 5, accountQueue: 64 });
  const order: string[] = [];
  const waits = new Map<string, ReturnType<HashingGate["enter"]>>();
  const enter = (address: string) =>
    waits.set(
      address,
      gate.enter("acct", address, "other").then((slot) => {
        order.push(address);
        return slot;
      }),
    );
  let current = await gate.enter("acct", "10.0.0.1", "other");
  const nextCheck = async () => {
    if ("release" in current) current.release();
    await new Promise((resolve) => setImmediate(resolve));
    current = await waits.get(order.at(-1)!)!;
  };
  /** Every attempt in line gets its turn, then the last check ends. */
  const finish = async () => {
    while (waits.size > order.length) await nextCheck();
    if ("release" in current) current.release();
  };
  return { order, enter, nextCheck, finish };
}

describe("HashingGate account line, one network at a time", () => {
  it("serves an attempt from a network with nobody else in line next, however many wait from another", async () => {
    const { order, enter, nextCheck, finish } = await accountLine();
    // Twenty guesses wait from one /24, then the owner's attempt from another network.
    for (let i = 2; i < 22; i++) enter(`10.0.0.${i}`);
    enter("192.0.2.7");
    await nextCheck();
    await nextCheck();
    // The owner's network had nobody else waiting: its attempt comes within the first two, not after twenty guesses.
    expect(order.slice(0, 2)).toContain("192.0.2.7");
    // Every attempt still gets its turn: nothing is refused.
    await finish();
    expect(new Set(order).size).toBe(21);
  });

  it("serves an attempt from a network the account logged in from before ahead of every network in line", async () => {
    const gate = new HashingGate({ perAccount: 1, perAddress: 5, total: 5, queue: 5, accountQueue: 3 });
    const order: string[] = [];
    const waits = new Map<string, ReturnType<HashingGate["enter"]>>();
    const enter = (address: string, lane: "ahead" | "other") =>
      waits.set(
        address,
        gate.enter("acct", address, lane).then((slot) => {
          order.push(address);
          return slot;
        }),
      );
    const running = await gate.enter("acct", "10.0.0.1", "other");
    // A botnet fills the line, each guess from a /24 of its own; a fourth finds it full.
    for (let i = 1; i <= 3; i++) enter(`10.0.${i}.1`, "other");
    expect(await gate.enter("acct", "10.0.4.1", "other")).toEqual({ refused: "account" });
    // The owner's network has a place of its own, and the next turn.
    enter("192.0.2.7", "ahead");
    expect(gate.inLine("acct")).toBe(4);
    // It stays within the account's bound: nothing runs beside the check in progress.
    await new Promise((resolve) => setImmediate(resolve));
    expect(order).toEqual([]);
    if ("release" in running) running.release();
    // Each check ends in turn, handing the account's slot to the next in line.
    while (order.length < 4) {
      await new Promise((resolve) => setImmediate(resolve));
      const slot = await waits.get(order.at(-1)!)!;
      if ("release" in slot) slot.release();
    }
    expect(order).toEqual(["192.0.2.7", "10.0.1.1", "10.0.2.1", "10.0.3.1"]);
  });

  it("serves the newest attempt first once a botnet's networks fill the line, so the owner goes at the next free check", async () => {
    const { order, enter, nextCheck, finish } = await accountLine();
    // A guess from each of more networks than the line takes turns over, then the owner's from a network never seen.
    const guesses = NEWEST_FIRST_AFTER_NETWORKS + 4;
    for (let i = 1; i <= guesses; i++) enter(`10.0.${i}.1`);
    enter("198.18.0.1");
    await nextCheck();
    expect(order).toEqual(["198.18.0.1"]);
    // A guess sent after the owner's answer is newer again, and goes next.
    enter("10.0.99.1");
    await nextCheck();
    expect(order).toEqual(["198.18.0.1", "10.0.99.1"]);
    // The owner again, and a guess just after it: the guess goes first, then the owner, though another guess came in
    // meanwhile (a guesser waiting on its answers sends one per check that ends).
    enter("198.18.1.1");
    enter("10.0.100.1");
    await nextCheck();
    enter("10.0.101.1");
    await nextCheck();
    expect(order.slice(2)).toEqual(["10.0.100.1", "198.18.1.1"]);
    // Nothing is refused while the line holds it: every attempt gets its turn.
    await finish();
    expect(new Set(order).size).toBe(guesses + 5);
  });

  it("does not leave the owner at the bottom when guesses keep coming in one per check, a few at a time", async () => {
    const { order, enter, nextCheck, finish } = await accountLine();
    // The attack's opening burst, then guesses sent as answers come back: two after one check, one after each other.
    for (let i = 1; i <= NEWEST_FIRST_AFTER_NETWORKS + 4; i++) enter(`10.0.${i}.1`);
    await nextCheck();
    enter("10.1.0.1");
    enter("10.1.1.1");
    await nextCheck();
    // The owner, and a guess right behind it.
    enter("198.18.0.1");
    enter("10.1.2.1");
    await nextCheck();
    enter("10.1.3.1");
    await nextCheck();
    enter("10.1.4.1");
    await nextCheck();
    expect(order.indexOf("198.18.0.1")).toBeGreaterThan(-1);
    expect(order.indexOf("198.18.0.1")).toBeLessThanOrEqual(4);
    await finish();
  });

  it("keeps taking turns by network below that many networks", async () => {
    const gate = new HashingGate({ perAccount: 1, perAddress: 5, total: 5, queue: 5, accountQueue: 64 });
    const order: string[] = [];
    const running = await gate.enter("acct", "10.0.0.1", "other");
    const waits = Array.from({ length: NEWEST_FIRST_AFTER_NETWORKS }, (_, i) => `10.0.${i + 1}.1`).map(
      (address) =>
        gate.enter("acct", address, "other").then((slot) => {
          order.push(address);
          return slot;
        }),
    );
    if ("release" in running) running.release();
    for (const wait of waits) {
      const slot = await wait;
      if ("release" in slot) slot.release();
    }
    expect(order).toEqual(Array.from({ length: NEWEST_FIRST_AFTER_NETWORKS }, (_, i) => `10.0.${i + 1}.1`));
  });

  it("answers attempts left at the bottom after the line's longest wait, and turns away the oldest of a full line", async () => {
    let now = 0;
    const gate = new HashingGate(
      { perAccount: 1, perAddress: 5, total: 5, queue: 5, accountQueue: 12, lineMaxWaitMs: 20_000 },
      () => now,
    );
    const answers = new Map<string, string>();
    const enter = (address: string) =>
      gate.enter("acct", address, "other").then((slot) => {
        answers.set(address, "refused" in slot ? slot.refused : "served");
        return slot;
      });
    const running = await gate.enter("acct", "10.0.0.1", "other");
    const old = Array.from({ length: 12 }, (_, i) => enter(`10.0.${i + 1}.1`));
    // The line is full and serving the newest first: a newcomer takes the place of the attempt that waited longest.
    now = 5_000;
    const newcomer = enter("198.18.0.1");
    await new Promise((resolve) => setImmediate(resolve));
    expect(answers.get("10.0.1.1")).toBe("account");
    expect(gate.inLine("acct")).toBe(12);
    // Past the longest wait, the next free check turns away whoever has waited that long, and serves the newcomer.
    now = 21_000;
    if ("release" in running) running.release();
    const served = await newcomer;
    expect(answers.get("198.18.0.1")).toBe("served");
    await Promise.all(old);
    expect([...answers.values()].filter((a) => a === "account")).toHaveLength(12);
    expect(gate.inLine("acct")).toBe(0);
    if ("release" in served) served.release();
  });

  it("groups IPv6 addresses by /64 and IPv4-mapped ones as IPv4", () => {
    expect(networkOf("2001:db8:1:2:3:4:5:6")).toBe(networkOf("2001:db8:1:2::9"));
    expect(networkOf("2001:db8:1:2::9")).not.toBe(networkOf("2001:db8:1:3::9"));
    expect(networkOf("::ffff:198.51.100.7")).toBe(networkOf("198.51.100.200"));
    expect(networkOf("198.51.100.7")).not.toBe(networkOf("198.51.101.7"));
    expect(networkOf("unknown")).toBe("unknown");
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
