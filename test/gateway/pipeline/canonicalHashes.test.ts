import { describe, expect, it } from "vitest";
import { CanonicalHashes } from "../../../src/gateway/pipeline/canonicalHashes.js";
import type { JsonRpcRequest, JsonRpcResponse } from "../../../src/rpc/jsonRpc.js";

const HASH = `0x${"AB".repeat(32)}`;

/** A node whose answers the test gives, one call at a time. */
function node() {
  const asked: JsonRpcRequest[] = [];
  const answers: Array<(response: JsonRpcResponse | Error) => void> = [];
  const send = (request: JsonRpcRequest) => {
    asked.push(request);
    return new Promise<{ response: JsonRpcResponse }>((resolve, reject) =>
      answers.push((r) => (r instanceof Error ? reject(r) : resolve({ response: r }))),
    );
  };
  return { asked, answers, hashes: new CanonicalHashes(send) };
}

/** Lets the answer's callbacks run. */
const settled = () => new Promise((resolve) => setImmediate(resolve));

describe("canonical hashes of final heights", () => {
  it("asks once per height, at that height, and remembers the hash (lower case)", async () => {
    const { asked, answers, hashes } = node();
    hashes.learn(1);
    hashes.learn(1);
    expect(asked).toEqual([
      { jsonrpc: "2.0", id: 1, method: "eth_getBlockByNumber", params: ["0x1", false] },
    ]);
    expect(hashes.get(1)).toBeUndefined();
    answers[0]!({ jsonrpc: "2.0", id: 1, result: { number: "0x1", hash: HASH } });
    await settled();
    expect(hashes.get(1)).toBe(HASH.toLowerCase());
    hashes.learn(1);
    expect(asked).toHaveLength(1);
  });

  it("keeps nothing from an error, a null, a failure or an answer for another height, and asks again later", async () => {
    const { asked, answers, hashes } = node();
    const outcomes: Array<JsonRpcResponse | Error> = [
      { jsonrpc: "2.0", id: 1, error: { code: -32000, message: "header not found" } },
      { jsonrpc: "2.0", id: 1, result: null },
      new Error("connection refused"),
      { jsonrpc: "2.0", id: 1, result: { number: "0x2", hash: HASH } },
    ];
    for (const [i, outcome] of outcomes.entries()) {
      hashes.learn(1);
      expect(asked).toHaveLength(i + 1);
      answers[i]!(outcome);
      await settled();
      expect(hashes.get(1)).toBeUndefined();
    }
  });
});
