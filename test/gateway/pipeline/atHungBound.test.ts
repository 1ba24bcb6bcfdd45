import { describe, expect, it } from "vitest";
import { atHungBound } from "../../../src/gateway/pipeline/forwardedCall.js";

/** A read on a node with a 300 ms hung bound, 300 ms into its wait, another node there, hedging on, budget left. */
const at = (overrides: Partial<Parameters<typeof atHungBound>[0]> = {}) =>
  atHungBound({
    next: true,
    stuck: false,
    waited: 300,
    hungAfter: 300,
    hedged: true,
    budgetLeft: true,
    hungIn: 200,
    minWait: 300,
    ...overrides,
  });

describe("atHungBound", () => {
  it("moves a read on a slow node from the budget, and waits while the budget is spent", () => {
    expect(at()).toEqual({ move: true, owed: false, fromBudget: true });
    // Looked at again when its node would count as hung (200 ms), before twice the bound (300 ms more).
    expect(at({ budgetLeft: false })).toEqual({ move: false, refused: true, again: 200 });
    expect(at({ budgetLeft: false, hungIn: 500 })).toEqual({ move: false, refused: true, again: 300 });
  });

  it("moves a read whose every attempt is on a hung node, or that waited twice the bound, owed to the budget", () => {
    expect(at({ stuck: true, budgetLeft: false })).toEqual({ move: true, owed: true, fromBudget: false });
    expect(at({ waited: 600, budgetLeft: false })).toEqual({ move: true, owed: true, fromBudget: false });
  });

  it("moves at once with hedging off, and waits where no other node is left", () => {
    expect(at({ hedged: false, budgetLeft: false })).toEqual({ move: true, owed: false, fromBudget: false });
    expect(at({ next: false, stuck: true })).toEqual({ move: false, refused: false, again: 200 });
    // Nothing left to wait for before twice the bound: looked at again after the least wait.
    expect(at({ next: false, hungIn: -5, waited: 650 })).toEqual({ move: false, refused: false, again: 300 });
  });
});
