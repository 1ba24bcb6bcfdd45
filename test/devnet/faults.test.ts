import { describe, expect, it } from "vitest";
import { DevnetInputError } from "../../src/devnet/errors.js";
import { fullNodeProduces, parseFault, targetHeight } from "../../src/devnet/faults.js";

describe("parseFault", () => {
  it("accepts every fault kind, and lag with a block count as number or digits", () => {
    expect(parseFault({ kind: "lag", blocks: 5 })).toEqual({ kind: "lag", blocks: 5 });
    expect(parseFault({ kind: "lag", blocks: "7" })).toEqual({ kind: "lag", blocks: 7 });
    for (const kind of ["stall", "fork", "kill", "heal"]) expect(parseFault({ kind })).toEqual({ kind });
  });

  it.each([
    [null, /JSON object/],
    [[], /JSON object/],
    ["lag", /JSON object/],
    [{}, /kind must be one of lag, slow, stall, fork, kill, heal \(got undefined\)/],
    [{ kind: "explode" }, /got "explode"/],
    [{ kind: "lag" }, /lag needs blocks/],
    [{ kind: "lag", blocks: 0 }, /lag needs blocks/],
    [{ kind: "lag", blocks: 1.5 }, /lag needs blocks/],
    [{ kind: "lag", blocks: "-3" }, /lag needs blocks/],
    [{ kind: "lag", blocks: 10_000_000 }, /lag needs blocks/],
    [{ kind: "stall", blocks: 3 }, /blocks applies to lag only/],
  ])("refuses %j", (input, message) => {
    expect(() => parseFault(input)).toThrow(DevnetInputError);
    expect(() => parseFault(input)).toThrow(message);
  });
});

describe("targetHeight", () => {
  it("follows the head, stays N behind when lagging, and stops when stalled or killed", () => {
    expect(targetHeight(undefined, 10)).toBe(10);
    expect(targetHeight({ kind: "fork" }, 10)).toBe(10);
    expect(targetHeight({ kind: "lag", blocks: 3 }, 10)).toBe(7);
    expect(targetHeight({ kind: "lag", blocks: 30 }, 10)).toBe(0);
    expect(targetHeight({ kind: "stall" }, 10)).toBeUndefined();
    expect(targetHeight({ kind: "kill" }, 10)).toBeUndefined();
  });

  it("counts only stalled or killed full nodes as not producing", () => {
    expect(fullNodeProduces(undefined)).toBe(true);
    expect(fullNodeProduces({ kind: "lag", blocks: 2 })).toBe(true);
    expect(fullNodeProduces({ kind: "fork" })).toBe(true);
    expect(fullNodeProduces({ kind: "stall" })).toBe(false);
    expect(fullNodeProduces({ kind: "kill" })).toBe(false);
  });
});
