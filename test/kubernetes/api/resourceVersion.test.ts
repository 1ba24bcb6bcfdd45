import { describe, expect, it } from "vitest";
import { olderResourceVersion } from "../../../src/kubernetes/api/resourceVersion.js";

describe("olderResourceVersion", () => {
  it("orders decimal resource versions as integers of any size", () => {
    expect(olderResourceVersion("101", "102")).toBe(true);
    expect(olderResourceVersion("99", "100")).toBe(true);
    expect(olderResourceVersion("100", "99")).toBe(false);
    expect(olderResourceVersion("102", "102")).toBe(false);
    // Past 2^53, where Number would call them equal.
    expect(olderResourceVersion("90071992547409921", "90071992547409922")).toBe(true);
  });

  it("calls nothing older that it cannot order", () => {
    expect(olderResourceVersion(undefined, "5")).toBe(false);
    expect(olderResourceVersion("5", undefined)).toBe(false);
    expect(olderResourceVersion("abc", "5")).toBe(false);
    expect(olderResourceVersion("05", "6")).toBe(false);
  });
});
