import { describe, expect, it } from "vitest";
import { DevnetInputError } from "../../src/devnet/errors.js";
import { describeFault, parseFault, targetHeight } from "../../src/devnet/faults.js";
import { SLOW_PROFILES, latencySampler, seededRandom } from "../../src/devnet/latencyProfile.js";

const quantile = (sorted: number[], q: number) => sorted[Math.floor(q * (sorted.length - 1))]!;

describe("slow latency profile", () => {
  it("draws log-normal delays with the profile's p50 and p99, repeatably from a seed", () => {
    const draw = latencySampler(SLOW_PROFILES.light, seededRandom(7));
    const samples = Array.from({ length: 40_000 }, draw).sort((a, b) => a - b);
    expect(quantile(samples, 0.5)).toBeGreaterThan(45);
    expect(quantile(samples, 0.5)).toBeLessThan(55);
    expect(quantile(samples, 0.99)).toBeGreaterThan(1_700);
    expect(quantile(samples, 0.99)).toBeLessThan(2_350);
    expect(samples.at(-1)).toBeLessThanOrEqual(10_000);
    const again = latencySampler(SLOW_PROFILES.light, seededRandom(7));
    const first = latencySampler(SLOW_PROFILES.light, seededRandom(7));
    expect([again(), again(), again()]).toEqual([first(), first(), first()]);
    const other = latencySampler(SLOW_PROFILES.light, seededRandom(8));
    expect(other()).not.toBe(latencySampler(SLOW_PROFILES.light, seededRandom(7))());
  });
});

describe("the slow fault", () => {
  it("parses with the light profile by default, a named profile and a seed", () => {
    expect(parseFault({ kind: "slow" })).toEqual({ kind: "slow", profile: "light" });
    expect(parseFault({ kind: "slow", profile: "severe", seed: "42" })).toEqual({
      kind: "slow",
      profile: "severe",
      seed: 42,
    });
    expect(describeFault({ kind: "slow", profile: "mild", seed: 3 })).toBe("slow mild seed 3");
  });

  it.each([
    [{ kind: "slow", profile: "glacial" }, /slow profile must be one of light, mild, severe/],
    [{ kind: "slow", seed: -1 }, /slow seed must be a whole number/],
    [{ kind: "slow", blocks: 2 }, /blocks applies to lag only/],
    [{ kind: "stall", profile: "light" }, /profile and seed apply to slow only/],
  ])("refuses %j", (input, message) => {
    expect(() => parseFault(input)).toThrow(DevnetInputError);
    expect(() => parseFault(input)).toThrow(message);
  });

  it("keeps a slow node at the head", () => {
    expect(targetHeight({ kind: "slow", profile: "light" }, 12)).toBe(12);
  });
});
