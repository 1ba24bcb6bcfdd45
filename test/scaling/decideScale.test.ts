import { describe, expect, it } from "vitest";
import { decideScale } from "../../src/scaling/decideScale.js";
import { rateOf } from "../../src/scaling/rateReading.js";
import { MINUTE, params, replicasOf, reversals, simulate } from "./simulate.js";

// Monday 2026-11-23 00:00 UTC.
const MONDAY = Date.UTC(2026, 10, 23);

describe("decideScale", () => {
  it("follows a step load up quickly, one step limit at a time, and settles", () => {
    const steps = simulate({
      params: params({ targetRequestsPerNode: 50, maxReplicas: 20, scaleUpStep: 4 }),
      start: MONDAY,
      durationMs: 5 * MINUTE,
      initial: 1,
      load: (t) => (t < MONDAY + MINUTE ? 20 : 500),
    });
    const after = steps.filter((s) => s.at >= MONDAY + MINUTE);
    // 500 req/s at 50/node needs 10: 1 -> 5 -> 9 -> 10 in three rounds, then nothing.
    expect(replicasOf(after).slice(0, 4)).toEqual([5, 9, 10, 10]);
    expect(after[0]!.decision).toMatchObject({ change: "up", desired: 10 });
    expect(after[0]!.decision.reason).toContain("step limit 4");
    expect(new Set(replicasOf(after.slice(2)))).toEqual(new Set([10]));
  });

  it("absorbs a spike: up at once, down only after the stabilization window", () => {
    const spikeAt = MONDAY + MINUTE;
    const steps = simulate({
      params: params({ targetRequestsPerNode: 50, scaleUpStep: 10, scaleDownStabilization: "300s" }),
      start: MONDAY,
      durationMs: 10 * MINUTE,
      initial: 2,
      load: (t) => (t === spikeAt ? 400 : 90),
    });
    const spike = steps.find((s) => s.at === spikeAt)!;
    expect(spike.decision).toMatchObject({ change: "up", replicas: 8 });
    const firstDown = steps.find((s) => s.decision.change === "down")!;
    // The spike's recommendation leaves the 300 s window exactly 300 s later.
    expect(firstDown.at - spikeAt).toBe(300_000);
    expect(firstDown.decision.replicas).toBe(2);
    const waiting = steps.filter((s) => s.at > spikeAt && s.at < firstDown.at);
    expect(waiting.every((s) => s.decision.replicas === 8)).toBe(true);
    expect(waiting[0]!.decision.reason).toMatch(/waits for the stabilization window/);
  });

  it("tracks a slow ramp without ever scaling down", () => {
    const steps = simulate({
      params: params({ targetRequestsPerNode: 50, maxReplicas: 20 }),
      start: MONDAY,
      durationMs: 20 * MINUTE,
      initial: 1,
      load: (t) => (t - MONDAY) / 3_000, // 0 to 400 req/s over 20 minutes
    });
    expect(steps.some((s) => s.decision.change === "down")).toBe(false);
    expect(steps.at(-1)!.decision.replicas).toBe(8);
    // Never short of capacity by more than the tolerance.
    for (const s of steps) expect(s.decision.replicas * 50 * 1.1).toBeGreaterThanOrEqual(s.rate!);
  });

  it("does not flap under a load oscillating across node boundaries", () => {
    const steps = simulate({
      params: params({ targetRequestsPerNode: 50 }),
      start: MONDAY,
      durationMs: 30 * MINUTE,
      initial: 4,
      load: (t) => (Math.floor((t - MONDAY) / 30_000) % 2 === 0 ? 180 : 260),
    });
    expect(reversals(steps)).toBe(0);
    expect(steps.filter((s) => s.decision.change !== "hold")).toHaveLength(1);
    expect(steps.at(-1)!.decision.replicas).toBe(6);
  });

  it("ignores changes within the tolerance band", () => {
    const steps = simulate({
      params: params({ targetRequestsPerNode: 50, tolerance: 0.1 }),
      start: MONDAY,
      durationMs: 20 * MINUTE,
      initial: 4,
      load: (t) => (Math.floor((t - MONDAY) / 15_000) % 2 === 0 ? 181 : 219),
    });
    expect(new Set(replicasOf(steps))).toEqual(new Set([4]));
    expect(steps[0]!.decision.reason).toContain("within 10% of 4");
  });

  it("never scales down while the rate source fails, and waits a window after it returns", () => {
    const outage = { from: MONDAY + 2 * MINUTE, to: MONDAY + 22 * MINUTE };
    const steps = simulate({
      params: params({ targetRequestsPerNode: 50, scaleDownStabilization: "300s" }),
      start: MONDAY,
      durationMs: 40 * MINUTE,
      initial: 1,
      load: (t) => (t >= outage.from && t < outage.to ? undefined : t < outage.from ? 400 : 10),
    });
    const during = steps.filter((s) => s.at >= outage.from && s.at < outage.to);
    expect(during.every((s) => s.decision.replicas === 8 && s.decision.held === "rate-unavailable")).toBe(
      true,
    );
    expect(during[0]!.decision.reason).toMatch(
      /request rate unavailable \(connection refused\): no scale-down/,
    );
    const firstDown = steps.find((s) => s.decision.change === "down")!;
    // Held sizes count as recommendations: the first scale-down comes a full window after the last failed read.
    expect(firstDown.at).toBe(during.at(-1)!.at + 300_000);
    expect(firstDown.decision.replicas).toBe(1);
  });

  it("raises a pool to its floor even without a rate", () => {
    const decision = decideScale({
      now: MONDAY,
      params: params({ minReplicas: 3 }),
      current: 1,
      rate: { ok: false, reason: "timeout", failed: true },
      pool: { starting: 0, healthy: 1 },
    });
    expect(decision).toMatchObject({ replicas: 3, change: "up", held: "rate-unavailable" });
  });

  it("does not scale at all during a systemic failure", () => {
    const systemic = { from: MONDAY + 10 * MINUTE, to: MONDAY + 20 * MINUTE };
    const steps = simulate({
      params: params({ targetRequestsPerNode: 50 }),
      start: MONDAY,
      durationMs: 20 * MINUTE,
      initial: 1,
      load: (t) => (t < MONDAY + 12 * MINUTE ? 200 : t < MONDAY + 16 * MINUTE ? 1000 : 0),
      pool: (t, replicas) =>
        t >= systemic.from && t < systemic.to
          ? { starting: 0, healthy: 0, systemic: { cause: "peers-halted", message: "peers stopped" } }
          : { starting: 0, healthy: replicas },
    });
    const during = steps.filter((s) => s.at >= systemic.from && s.at < systemic.to);
    expect(during.every((s) => s.decision.replicas === 4 && s.decision.change === "hold")).toBe(true);
    expect(during[0]!.decision.reason).toBe("systemic failure (peers-halted): scaling held at 4");
  });

  it("never scales down below the Starting and Healthy nodes the rate needs", () => {
    // 6 replicas, 3 of them Lagging; 90 req/s needs 2. The backend might remove serving nodes first, so keep 2 + 3.
    const decision = decideScale({
      now: MONDAY,
      params: params({ targetRequestsPerNode: 50, minReplicas: 1 }),
      current: 6,
      rate: rateOf(90),
      pool: { starting: 1, healthy: 2 },
    });
    expect(decision).toMatchObject({ replicas: 5, change: "down" });
    expect(decision.reason).toContain("3 of 6 nodes serve, keeping 5");
  });

  it("keeps within minReplicas and maxReplicas", () => {
    const steps = simulate({
      params: params({ targetRequestsPerNode: 50, minReplicas: 2, maxReplicas: 6, scaleUpStep: 10 }),
      start: MONDAY,
      durationMs: 20 * MINUTE,
      initial: 2,
      load: (t) => (t < MONDAY + 5 * MINUTE ? 10_000 : 0),
    });
    expect(Math.max(...replicasOf(steps))).toBe(6);
    expect(steps[0]!.decision.reason).toContain("maxReplicas 6");
    expect(steps.at(-1)!.decision.replicas).toBe(2);
    expect(steps.at(-1)!.decision.reason).toContain("minReplicas 2");
  });

  it("comes down to maxReplicas at once when the pool is above it", () => {
    const decision = decideScale({
      now: MONDAY,
      params: params({ maxReplicas: 4 }),
      current: 7,
      rate: rateOf(1_000),
      pool: { starting: 0, healthy: 7 },
      previous: { recommendations: [{ at: MONDAY - 1_000, replicas: 7 }] },
    });
    expect(decision).toMatchObject({ replicas: 4, change: "down" });
  });
});

describe("cron floors", () => {
  const businessHours = {
    name: "business hours",
    start: "0 8 * * 1-5",
    end: "0 20 * * 1-5",
    timezone: "Europe/Berlin",
    minReplicas: 6,
  };

  it("enters at the start in its time zone (at once, past the step limit) and leaves after the window", () => {
    // Berlin is UTC+1 in November: 08:00 there is 07:00 UTC.
    const steps = simulate({
      params: params({ cronFloors: [businessHours], scaleUpStep: 1, scaleDownStabilization: "300s" }),
      start: MONDAY + 6 * 60 * MINUTE,
      durationMs: 14 * 60 * MINUTE,
      everyMs: MINUTE,
      initial: 1,
      load: () => 5,
    });
    const at = (utcHour: number, minute = 0) =>
      steps.find((s) => s.at === MONDAY + utcHour * 60 * MINUTE + minute * MINUTE)!.decision;
    expect(at(6, 59)).toMatchObject({ replicas: 1, floor: 1 });
    expect(at(7)).toMatchObject({ replicas: 6, floor: 6, change: "up" });
    expect(at(7).reason).toContain('cron floor "business hours" (at least 6)');
    expect(at(18, 59)).toMatchObject({ replicas: 6 });
    // 20:00 Berlin: the floor ends; the pool shrinks once the stabilization window has passed.
    expect(at(19)).toMatchObject({ replicas: 6, floor: 1, change: "hold" });
    // The last floored recommendation (18:59) leaves the 300 s window at 19:04.
    expect(at(19, 3)).toMatchObject({ replicas: 6 });
    expect(at(19, 4)).toMatchObject({ replicas: 1, change: "down" });
  });

  it("honours daylight saving time and the day of the week in the floor's time zone", () => {
    const decide = (now: number, timezone: string) =>
      decideScale({
        now,
        params: params({ cronFloors: [{ ...businessHours, timezone }] }),
        current: 1,
        rate: rateOf(0),
        pool: { starting: 0, healthy: 1 },
      }).floor;
    // Monday 2026-07-06: Berlin is UTC+2, so 06:30 UTC is 08:30 there.
    expect(decide(Date.UTC(2026, 6, 6, 6, 30), "Europe/Berlin")).toBe(6);
    expect(decide(Date.UTC(2026, 6, 6, 5, 30), "Europe/Berlin")).toBe(1);
    // The same instant is 02:30 in New York: no floor there until 12:00 UTC.
    expect(decide(Date.UTC(2026, 6, 6, 6, 30), "America/New_York")).toBe(1);
    expect(decide(Date.UTC(2026, 6, 6, 12, 0), "America/New_York")).toBe(6);
    // Saturday 2026-07-11 at noon Berlin: a weekend, no floor.
    expect(decide(Date.UTC(2026, 6, 11, 10, 0), "Europe/Berlin")).toBe(1);
    // Friday evening in Tokyo is still Friday morning in UTC.
    expect(decide(Date.UTC(2026, 6, 10, 10, 0), "Asia/Tokyo")).toBe(6);
    expect(decide(Date.UTC(2026, 6, 10, 11, 0), "Asia/Tokyo")).toBe(1);
  });

  it("spans midnight and takes the highest of overlapping floors", () => {
    const floors = [
      { name: "night", start: "0 22 * * *", end: "0 6 * * *", timezone: "UTC", minReplicas: 2 },
      { name: "batch", start: "0 23 * * *", end: "30 23 * * *", timezone: "UTC", minReplicas: 4 },
    ];
    const floorAt = (h: number, m = 0) =>
      decideScale({
        now: MONDAY + h * 60 * MINUTE + m * MINUTE,
        params: params({ cronFloors: floors }),
        current: 1,
        rate: rateOf(0),
        pool: { starting: 0, healthy: 1 },
      }).floor;
    expect(floorAt(21, 59)).toBe(1);
    expect(floorAt(22)).toBe(2);
    expect(floorAt(23, 10)).toBe(4);
    expect(floorAt(23, 30)).toBe(2);
    expect(floorAt(24 + 5, 59)).toBe(2);
    expect(floorAt(24 + 6)).toBe(1);
  });
});
