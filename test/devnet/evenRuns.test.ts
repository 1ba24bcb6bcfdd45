import { describe, expect, it } from "vitest";
import { evenRuns } from "../../src/devnet/drivenNode.js";

describe("evenRuns: a replay's empty blocks in as few anvil calls as give the same blocks", () => {
  it("takes single blocks a constant interval apart as one run, and keeps shared seconds and other gaps apart", () => {
    const steps = [
      { timestamp: 100, blocks: 1 },
      { timestamp: 101, blocks: 1 },
      { timestamp: 102, blocks: 1 },
      { timestamp: 104, blocks: 1 },
      { timestamp: 106, blocks: 1 },
      { timestamp: 107, blocks: 3 },
      { timestamp: 108, blocks: 1 },
      { timestamp: 110, blocks: 1 },
    ];
    expect(evenRuns(steps)).toEqual([
      { timestamp: 100, blocks: 3, interval: 1 },
      { timestamp: 104, blocks: 2, interval: 2 },
      { timestamp: 107, blocks: 3 },
      { timestamp: 108, blocks: 2, interval: 2 },
    ]);
    const blocks = (runs: ReturnType<typeof evenRuns>) => runs.reduce((n, r) => n + r.blocks, 0);
    expect(blocks(evenRuns(steps))).toBe(10);
  });
});
