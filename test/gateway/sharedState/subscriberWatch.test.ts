import { describe, expect, it } from "vitest";
import { SubscriberWatch } from "../../../src/gateway/sharedState/subscriberWatch.js";
import type { WatchTimers } from "../../../src/gateway/sharedState/subscriberWatch.js";

/** Timers on a hand-moved clock; what waits for pending I/O runs only when the test says the loop got there. */
function manualTimers() {
  let now = 0;
  let timers: { at: number; run: () => void }[] = [];
  let io: (() => void)[] = [];
  const api: WatchTimers = {
    after(ms, run) {
      const timer = { at: now + ms, run };
      timers.push(timer);
      return () => {
        timers = timers.filter((t) => t !== timer);
      };
    },
    afterPendingIo(run) {
      io.push(run);
    },
  };
  return {
    api,
    /** Moves the clock, firing each timer that falls due (in order). */
    advance(ms: number) {
      const until = now + ms;
      for (;;) {
        const due = timers.filter((t) => t.at <= until).sort((x, y) => x.at - y.at)[0];
        if (!due) break;
        timers = timers.filter((t) => t !== due);
        now = due.at;
        due.run();
      }
      now = until;
    },
    /** The loop reaches its check phase: what waited for pending I/O runs. */
    ioRead() {
      const waiting = io;
      io = [];
      for (const run of waiting) run();
    },
  };
}

/** A PING whose answer the test gives (or never gives). */
function pings() {
  const sent: { answer: () => void; fail: () => void }[] = [];
  return {
    sent,
    ping: () =>
      new Promise<unknown>((resolve, reject) => {
        sent.push({
          answer: () => resolve(["pong", ""]),
          fail: () => reject(new Error("Connection is closed.")),
        });
      }),
  };
}

/** A watch pinging every second with a 500 ms deadline, on a hand-moved clock, counting the stalls it calls. */
function watched() {
  const clock = manualTimers();
  const p = pings();
  let stalled = 0;
  const watch = new SubscriberWatch({
    intervalMs: 1_000,
    deadlineMs: 500,
    ping: p.ping,
    stalled: () => stalled++,
    timers: clock.api,
  });
  return { clock, p, watch, stalls: () => stalled };
}

const settle = () => new Promise<void>((resolve) => queueMicrotask(resolve));

describe("SubscriberWatch", () => {
  it("pings once an interval after each answer, and never calls an answered connection stalled", async () => {
    const { clock, p, watch, stalls } = watched();
    watch.start();
    for (let i = 1; i <= 5; i++) {
      clock.advance(999);
      expect(p.sent).toHaveLength(i - 1);
      clock.advance(1);
      expect(p.sent).toHaveLength(i);
      clock.advance(400);
      clock.ioRead();
      p.sent[i - 1]!.answer();
      await settle();
    }
    // At most one PING in flight: the sixth, unanswered, is the last sent; the watch stopped before its deadline
    // (the connection closed) calls nothing stalled.
    clock.advance(1_000);
    expect(p.sent).toHaveLength(6);
    clock.advance(499);
    expect(p.sent).toHaveLength(6);
    watch.stop();
    clock.advance(10_000);
    clock.ioRead();
    expect(stalls()).toBe(0);
    expect(p.sent).toHaveLength(6);
  });

  it("calls a connection stalled once when a PING is not answered by its deadline, and stops pinging", async () => {
    const { clock, p, watch, stalls } = watched();
    watch.start();
    clock.advance(1_000);
    expect(p.sent).toHaveLength(1);
    clock.advance(499);
    clock.ioRead();
    expect(stalls()).toBe(0);
    clock.advance(1);
    clock.ioRead();
    expect(stalls()).toBe(1);
    // A late answer changes nothing, and nothing more is sent.
    p.sent[0]!.answer();
    await settle();
    clock.advance(60_000);
    clock.ioRead();
    expect(stalls()).toBe(1);
    expect(p.sent).toHaveLength(1);
  });

  it("takes an answer already read by a busy loop when the deadline fired late as answered", async () => {
    const { clock, p, watch, stalls } = watched();
    watch.start();
    clock.advance(1_000);
    // The loop was blocked past the deadline: its timer runs first, then the socket's answer is read.
    clock.advance(2_000);
    p.sent[0]!.answer();
    await settle();
    clock.ioRead();
    expect(stalls()).toBe(0);
    clock.advance(1_000);
    expect(p.sent).toHaveLength(2);
    watch.stop();
  });

  it("leaves a failed PING to the deadline, and ignores a round stopped meanwhile (the connection closed)", async () => {
    const { clock, p, watch, stalls } = watched();
    watch.start();
    clock.advance(1_000);
    p.sent[0]!.fail();
    await settle();
    expect(stalls()).toBe(0);
    // The connection closed (the store stops the watch), then came back: a new round, nothing from the old one.
    watch.stop();
    clock.advance(500);
    clock.ioRead();
    expect(stalls()).toBe(0);
    watch.start();
    clock.advance(1_000);
    expect(p.sent).toHaveLength(2);
    p.sent[1]!.answer();
    await settle();
    clock.advance(1_000);
    expect(p.sent).toHaveLength(3);
    clock.advance(500);
    clock.ioRead();
    expect(stalls()).toBe(1);
  });
});
