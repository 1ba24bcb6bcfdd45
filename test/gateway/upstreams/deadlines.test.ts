import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { Deadlines } from "../../../src/gateway/upstreams/deadlines.js";

beforeEach(() => {
  vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "Date"] });
});
afterEach(() => {
  vi.useRealTimers();
});

describe("Deadlines", () => {
  it("runs each task once its time has come, in time order, never sooner, and not once cancelled", async () => {
    const deadlines = new Deadlines(() => Date.now());
    const start = Date.now();
    const ran: Array<[string, number]> = [];
    const at = (name: string) => () => ran.push([name, Date.now() - start]);
    deadlines.after(300, at("c"));
    deadlines.after(100, at("a"));
    const cancelled = deadlines.after(200, at("cancelled"));
    deadlines.after(100, at("a2"));
    deadlines.after(250, at("b"));
    deadlines.after(0, at("soonest"));
    deadlines.cancel(cancelled);
    await vi.advanceTimersByTimeAsync(99);
    expect(ran).toEqual([["soonest", 1]]);
    await vi.advanceTimersByTimeAsync(1);
    expect(ran.map(([name]) => name)).toEqual(["soonest", "a", "a2"]);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(ran).toEqual([
      ["soonest", 1],
      ["a", 100],
      ["a2", 100],
      ["b", 250],
      ["c", 300],
    ]);
    expect(deadlines.size).toBe(0);
    // Cancelling what ran already does nothing.
    deadlines.cancel(cancelled);
    expect(deadlines.size).toBe(0);
  });

  it("runs tasks that tasks add, and keeps the heap's order through many adds and cancels", async () => {
    const deadlines = new Deadlines(() => Date.now());
    const start = Date.now();
    const ran: number[] = [];
    let nested: number | undefined;
    deadlines.after(10, () => deadlines.after(10, () => (nested = Date.now() - start)));
    // A fixed pseudo-random sequence of delays, every third one cancelled.
    let seed = 11;
    const expected: number[] = [];
    for (let i = 0; i < 300; i++) {
      seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
      const ms = 1 + (seed % 500);
      const entry = deadlines.after(ms, () => ran.push(ms));
      if (i % 3 === 0) deadlines.cancel(entry);
      else expected.push(ms);
    }
    await vi.advanceTimersByTimeAsync(1_000);
    expect(nested).toBe(20);
    expect(ran).toEqual([...expected].sort((a, b) => a - b));
    expect(deadlines.size).toBe(0);
  });
});
