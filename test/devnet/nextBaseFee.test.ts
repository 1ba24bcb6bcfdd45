import { describe, expect, it } from "vitest";
import { nextBaseFee } from "../../src/devnet/nextBaseFee.js";

const GWEI = 1_000_000_000n;
const LIMIT = 30_000_000n;

describe("nextBaseFee", () => {
  it("falls by an eighth after an empty block, rises by an eighth after a full one, holds at the target", () => {
    expect(nextBaseFee({ baseFeePerGas: GWEI, gasUsed: 0n, gasLimit: LIMIT })).toBe(875_000_000n);
    expect(nextBaseFee({ baseFeePerGas: GWEI, gasUsed: LIMIT, gasLimit: LIMIT })).toBe(1_125_000_000n);
    expect(nextBaseFee({ baseFeePerGas: GWEI, gasUsed: LIMIT / 2n, gasLimit: LIMIT })).toBe(GWEI);
  });

  it("rises by at least 1 wei above the target and scales with the gas used", () => {
    expect(nextBaseFee({ baseFeePerGas: 7n, gasUsed: LIMIT / 2n + 1n, gasLimit: LIMIT })).toBe(8n);
    expect(nextBaseFee({ baseFeePerGas: GWEI, gasUsed: 21_000n, gasLimit: LIMIT })).toBe(875_175_000n);
  });
});
