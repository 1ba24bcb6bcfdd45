import { describe, expect, it } from "vitest";
import { poolScalingStatus, scalingEvent } from "../../src/scaling/poolScalingStatus.js";
import type { ScalingStatus } from "../../src/scaling/scaler.js";

function status(overrides: Partial<ScalingStatus>): ScalingStatus {
  return {
    network: "mainnet",
    at: 0,
    current: 2,
    replicas: 2,
    desired: 2,
    change: "hold",
    floor: 1,
    rate: 101.234,
    reason: "101 req/s needs 3 at 50/node (within 10% of 2); holding 2",
    applied: false,
    memory: { recommendations: [] },
    ...overrides,
  };
}

describe("pool scaling status", () => {
  it("reports desired replicas, the rate and an active condition while scaling works", () => {
    expect(poolScalingStatus(status({}))).toEqual({
      desiredReplicas: 2,
      requestRate: 101.23,
      scalingReason: "101 req/s needs 3 at 50/node (within 10% of 2); holding 2",
      condition: {
        type: "ScalingActive",
        status: "True",
        reason: "Scaling",
        message: "101 req/s needs 3 at 50/node (within 10% of 2); holding 2",
      },
      recommendations: [],
    });
  });

  it.each([
    [{ disabled: true as const }, "Disabled"],
    [{ conflict: "ScaledObject x scales this workload" }, "OtherAutoscaler"],
    [{ held: "systemic-failure" as const }, "SystemicFailure"],
    [{ held: "rate-unavailable" as const, rate: undefined }, "RateUnavailable"],
    [{ change: "up" as const, replicas: 3, scaleError: "forbidden" }, "ScaleFailed"],
  ])("turns the condition false with reason %j -> %s", (overrides, reason) => {
    const result = poolScalingStatus(status(overrides));
    expect(result.condition).toMatchObject({ status: "False", reason });
    expect(result.requestRate).toBe("rate" in overrides ? undefined : 101.23);
  });

  it("emits an Event for each size change and when a hold begins, not on every round", () => {
    const up = status({
      change: "up",
      replicas: 4,
      applied: true,
      reason: "230 req/s needs 5; scaling up 2 -> 4",
    });
    expect(scalingEvent(undefined, up)).toEqual({
      type: "Normal",
      reason: "ScaledUp",
      note: "2 -> 4: 230 req/s needs 5; scaling up 2 -> 4",
    });
    expect(
      scalingEvent(up, status({ current: 4, replicas: 3, change: "down", applied: true })),
    ).toMatchObject({
      reason: "ScaledDown",
    });
    const held = status({
      held: "systemic-failure",
      reason: "systemic failure (peers-halted): scaling held at 2",
    });
    expect(scalingEvent(up, held)).toEqual({ type: "Warning", reason: "ScalingHeld", note: held.reason });
    expect(scalingEvent(held, held)).toBeUndefined();
    expect(scalingEvent(held, status({}))).toBeUndefined();
    expect(scalingEvent(undefined, status({ change: "up", scaleError: "forbidden" }))).toMatchObject({
      type: "Warning",
      reason: "ScaleFailed",
    });
  });
});
