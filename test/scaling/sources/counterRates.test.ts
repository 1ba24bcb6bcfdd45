import { describe, expect, it } from "vitest";
import { CounterRates } from "../../../src/scaling/sources/counterRates.js";

describe("CounterRates", () => {
  it("is undefined until a series has two samples, then the increase per second", () => {
    const rates = new CounterRates();
    rates.record("mainnet", "gw-0", 0, 100);
    expect(rates.rate("mainnet", 0, 60_000)).toBeUndefined();
    rates.record("mainnet", "gw-0", 10_000, 600);
    expect(rates.rate("mainnet", 10_000, 60_000)).toBe(50);
    expect(rates.rate("sepolia", 10_000, 60_000)).toBeUndefined();
  });

  it("counts a counter reset (a restarted gateway) as a new start, not a negative rate", () => {
    const rates = new CounterRates();
    rates.record("mainnet", "gw-0", 0, 1_000);
    rates.record("mainnet", "gw-0", 10_000, 1_200);
    rates.record("mainnet", "gw-0", 20_000, 50); // restarted and served 50 since
    expect(rates.rate("mainnet", 20_000, 60_000)).toBe((200 + 50) / 20);
  });

  it("adds up gateways and forgets samples and gateways that left the window", () => {
    const rates = new CounterRates();
    for (let t = 0; t <= 120_000; t += 10_000) {
      rates.record("mainnet", "gw-0", t, t < 60_000 ? t / 10 : 6_000 + (t - 60_000) / 100); // 100/s, then 10/s
      if (t <= 30_000) rates.record("mainnet", "gw-1", t, t / 1_000); // 1/s, then gone
    }
    // The 60 s window ending at 120 s sees only the slow part of gw-0; gw-1 has no sample in it any more.
    expect(rates.rate("mainnet", 120_000, 60_000)).toBeCloseTo(10, 10);
  });
});
