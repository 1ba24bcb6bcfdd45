import { describe, expect, it } from "vitest";
import { agreeOnTag } from "../../src/gateway/upstreams/agreedTags.js";

const block = (number: number) => ({
  number,
  hash: `0x${number.toString(16).padStart(64, "0")}`,
  timestamp: 0,
});

describe("the safe or finalized block the sources agree on", () => {
  it("is the highest that two sources have reached", () => {
    expect(agreeOnTag([block(40), block(36), block(30)])).toEqual(block(36));
    expect(agreeOnTag([block(30), block(40)])).toEqual(block(30));
  });

  it("is the one source's own when only one is asked", () => {
    expect(agreeOnTag([block(36)])).toEqual(block(36));
  });

  it("is unknown while too few sources have one (none yet, or unreachable)", () => {
    expect(agreeOnTag([block(36), undefined])).toBeUndefined();
    expect(agreeOnTag([undefined])).toBeUndefined();
    expect(agreeOnTag([])).toBeUndefined();
    expect(agreeOnTag([block(36), undefined, block(20)])).toEqual(block(20));
  });
});
