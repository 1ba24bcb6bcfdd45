import { describe, expect, it } from "vitest";
import { readNodeAnswer } from "../../../src/gateway/upstreams/nodeAnswer.js";
import { serializeResponse } from "../../../src/gateway/rpc/serialize.js";

const malformed = (cause: unknown) => new Error("malformed", { cause });

describe("a node's answer written back to the client", () => {
  it("keeps the bytes of a node's error (geth escapes > as \\u003e), with the client's id", () => {
    const error = '{"code":-32000,"message":"max fee per gas \\u003e max","data":"0x08c379a0"}';
    const answer = readNodeAnswer(`{"jsonrpc":"2.0","id":1,"error":${error}}\n`, 42, true, malformed);
    expect(answer).toMatchObject({ id: 42, error: { code: -32000, message: "max fee per gas > max" } });
    expect(serializeResponse(answer)).toBe(`{"jsonrpc":"2.0","id":42,"error":${error}}`);
  });

  it("writes an error the node laid out otherwise as its value, and a result as its bytes", () => {
    const odd = readNodeAnswer(
      '{"error":{"message":"a \\u003e b","code":3},"id":1,"jsonrpc":"2.0"}',
      5,
      true,
      malformed,
    );
    expect(serializeResponse(odd)).toBe('{"jsonrpc":"2.0","id":5,"error":{"message":"a > b","code":3}}');
    const result = readNodeAnswer('{"jsonrpc":"2.0","id":1,"result":"a \\u003e b"}', 6, true, malformed);
    expect(serializeResponse(result)).toBe('{"jsonrpc":"2.0","id":6,"result":"a \\u003e b"}');
  });
});
