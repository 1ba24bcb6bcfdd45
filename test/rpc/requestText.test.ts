import { describe, expect, it } from "vitest";
import { requestText } from "../../src/rpc/requestText.js";

const stringified = (id: number, method: string, params: unknown) =>
  JSON.stringify({ jsonrpc: "2.0", id, method, params });

describe("requestText", () => {
  it("writes what JSON.stringify writes, for the usual parameters and for everything else", () => {
    const cases: Array<[string, unknown]> = [
      ["eth_getBlockByNumber", ["0x45", false]],
      ["eth_getBlockByHash", [`0x${"ab".repeat(32)}`, true]],
      ["eth_chainId", []],
      ["eth_chainId", undefined],
      ["eth_getBalance", ["0x0000000000000000000000000000000000000001", "latest"]],
      ["eth_feeHistory", [4, "latest", [25, 75.5]]],
      ["eth_x", [1e21, -0, 0.1, null, -5]],
      ["eth_x", [Number.NaN, Number.POSITIVE_INFINITY]],
      ["eth_x", [undefined, "a"]],
      ["eth_call", [{ to: "0x01", data: "0x" }, "latest"]],
      ["eth_x", ['say "hi"', "back\\slash", "line\nbreak", "tab\t", "é", "\u2028", "\u{1F600}"]],
      ["eth_x", { named: true }],
      ["eth_x", "not a list"],
      ["eth_x", null],
      ['odd"method', []],
      ["eth_x", [[1, 2], {}]],
    ];
    for (const [method, params] of cases) {
      const text = requestText(7, method, params);
      expect(text, `${method} ${String(params)}`).toBe(stringified(7, method, params));
      expect(() => JSON.parse(text) as unknown).not.toThrow();
    }
  });
});
