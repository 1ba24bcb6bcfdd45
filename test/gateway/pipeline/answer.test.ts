import { describe, expect, it } from "vitest";
import { answer } from "../../../src/gateway/pipeline/answer.js";
import { parseBody } from "../../../src/gateway/rpc/parseRequest.js";
import type { JsonRpcRequest } from "../../../src/rpc/jsonRpc.js";

const echo = (request: JsonRpcRequest) => ({
  jsonrpc: "2.0" as const,
  id: request.id ?? null,
  result: request.method,
});
const later = (request: JsonRpcRequest) => Promise.resolve(echo(request));
const body = (value: unknown) => parseBody(JSON.stringify(value), 10);

describe("answering a body, the same for HTTP and WebSocket", () => {
  it("answers a call the gateway answers itself at once, without a promise", () => {
    const answered = answer(body({ jsonrpc: "2.0", id: 1, method: "eth_blockNumber" }), { call: echo });
    expect(answered).toEqual({ body: { jsonrpc: "2.0", id: 1, result: "eth_blockNumber" } });
  });

  it("answers each call of a batch once, in order, leaving out notifications", async () => {
    let calls = 0;
    const answered = await answer(
      body([
        { jsonrpc: "2.0", id: 1, method: "a" },
        { jsonrpc: "2.0", method: "notified" },
        { jsonrpc: "1.0", id: 3, method: "bad" },
        { jsonrpc: "2.0", id: 4, method: "b" },
      ]),
      {
        call: (request) => {
          calls++;
          return later(request);
        },
      },
    );
    expect(calls).toBe(3);
    expect(answered.body).toMatchObject([
      { id: 1, result: "a" },
      { id: 3, error: { code: -32600 } },
      { id: 4, result: "b" },
    ]);
  });

  it("gives nothing back for notifications only", async () => {
    expect(answer(body({ jsonrpc: "2.0", method: "a" }), { call: echo })).toEqual({ body: undefined });
    expect(await answer(body([{ jsonrpc: "2.0", method: "a" }]), { call: later })).toEqual({
      body: undefined,
    });
  });

  it("answers a refused body with the refusal and calls nothing", async () => {
    const refusal = {
      body: { jsonrpc: "2.0" as const, id: 1, error: { code: -32005, message: "limit" } },
      retryAfterMs: 500,
    };
    const call = () => {
      throw new Error("called");
    };
    const parsed = body({ jsonrpc: "2.0", id: 1, method: "a" });
    expect(answer(parsed, { admit: () => refusal, call })).toEqual(refusal);
    expect(await answer(parsed, { admit: () => Promise.resolve(refusal), call })).toEqual(refusal);
    expect(await answer(parsed, { admit: () => Promise.resolve(undefined), call: echo })).toEqual({
      body: { jsonrpc: "2.0", id: 1, result: "a" },
    });
  });
});
