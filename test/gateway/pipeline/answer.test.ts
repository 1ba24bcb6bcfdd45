import { describe, expect, it } from "vitest";
import { answer, answerInto } from "../../../src/gateway/pipeline/answer.js";
import type { Answer } from "../../../src/gateway/pipeline/answer.js";
import { parseBody } from "../../../src/gateway/rpc/parseRequest.js";
import type { JsonRpcRequest, JsonRpcResponse } from "../../../src/rpc/jsonRpc.js";

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

  describe("into a sink", () => {
    const sinkOf = () => {
      const got: Answer[] = [];
      const failures: unknown[] = [];
      return {
        got,
        failures,
        sink: { answered: (a: Answer) => got.push(a), failed: (e: unknown) => failures.push(e) },
      };
    };

    it("hands a single call answered later to the sink in the turn its step answers, with no promise between", () => {
      let later: ((response: JsonRpcResponse) => void) | undefined;
      const { got, failures, sink } = sinkOf();
      const steps = {
        call: () => {
          throw new Error("call is not used when callInto is there");
        },
        callInto: (_request: JsonRpcRequest, _client: string, to: (response: JsonRpcResponse) => void) => {
          later = to;
          return undefined;
        },
      };
      expect(answerInto(body({ jsonrpc: "2.0", id: 7, method: "a" }), steps, "", sink)).toBeUndefined();
      expect(got).toEqual([]);
      later!({ jsonrpc: "2.0", id: 7, result: "a" });
      // Synchronously: no microtask ran between the step's answer and the sink's.
      expect(got).toEqual([{ body: { jsonrpc: "2.0", id: 7, result: "a" } }]);
      expect(failures).toEqual([]);
    });

    it("answers at once what the step answers at once, and sends what comes by promise to the sink", async () => {
      const { got, sink } = sinkOf();
      const steps = { call: echo, callInto: (request: JsonRpcRequest) => echo(request) };
      expect(answerInto(body({ jsonrpc: "2.0", id: 1, method: "a" }), steps, "", sink)).toEqual({
        body: { jsonrpc: "2.0", id: 1, result: "a" },
      });
      const promised = { call: later, callInto: later };
      expect(answerInto(body({ jsonrpc: "2.0", id: 2, method: "b" }), promised, "", sink)).toBeUndefined();
      // A batch goes through `call`, its answer to the sink too.
      expect(answerInto(body([{ jsonrpc: "2.0", id: 3, method: "c" }]), promised, "", sink)).toBeUndefined();
      await new Promise((resolve) => setImmediate(resolve));
      expect(got).toEqual([
        { body: { jsonrpc: "2.0", id: 2, result: "b" } },
        { body: [{ jsonrpc: "2.0", id: 3, result: "c" }] },
      ]);
    });

    it("gives a refusal at once or by the sink, and calls nothing then", async () => {
      const refusal = {
        body: { jsonrpc: "2.0" as const, id: 1, error: { code: -32005, message: "limit" } },
        retryAfterMs: 500,
      };
      const never = () => {
        throw new Error("called");
      };
      const parsed = body({ jsonrpc: "2.0", id: 1, method: "a" });
      const { got, sink } = sinkOf();
      expect(answerInto(parsed, { admit: () => refusal, call: never, callInto: never }, "", sink)).toEqual(
        refusal,
      );
      expect(
        answerInto(parsed, { admit: () => Promise.resolve(refusal), call: never, callInto: never }, "", sink),
      ).toBeUndefined();
      await new Promise((resolve) => setImmediate(resolve));
      expect(got).toEqual([refusal]);
    });
  });
});
