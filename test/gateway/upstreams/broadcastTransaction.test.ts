import { describe, expect, it } from "vitest";
import type { JsonRpcResponse } from "../../../src/rpc/jsonRpc.js";
import { RpcTransportError } from "../../../src/rpc/jsonRpc.js";
import type { BroadcastTarget } from "../../../src/gateway/upstreams/broadcastTransaction.js";
import {
  broadcastRawTransaction,
  rawTransactionHash,
} from "../../../src/gateway/upstreams/broadcastTransaction.js";

const RAW = "0x02f8";
const HASH = rawTransactionHash([RAW])!;
const ok = (result: unknown): JsonRpcResponse => ({ jsonrpc: "2.0", id: 1, result });
const refusal = (code: number, message: string): JsonRpcResponse => ({
  jsonrpc: "2.0",
  id: 1,
  error: { code, message },
});

/** A node answering eth_sendRawTransaction with `send`, and eth_getTransactionByHash with `known`. */
function node(
  name: string,
  send: JsonRpcResponse | Error,
  known: unknown = null,
): BroadcastTarget & { calls: string[] } {
  const calls: string[] = [];
  return {
    name,
    calls,
    call(method) {
      calls.push(method);
      if (method === "eth_getTransactionByHash") return Promise.resolve(ok(known));
      return send instanceof Error ? Promise.reject(send) : Promise.resolve(send);
    },
  };
}

describe("sending a raw transaction to every node", () => {
  it("reads the hash of a signed transaction, and nothing else", () => {
    expect(HASH).toMatch(/^0x[0-9a-f]{64}$/);
    expect(rawTransactionHash(["0x12", "0x34"])).toBeUndefined();
    expect(rawTransactionHash(["0x1"])).toBeUndefined();
    expect(rawTransactionHash(["zz"])).toBeUndefined();
    expect(rawTransactionHash("0x12")).toBeUndefined();
  });

  it("sends to every node and takes 'already known' and 'transaction already imported' as taken", async () => {
    const nodes = [
      node("a", refusal(-32000, "already known")),
      node("b", refusal(-32003, "transaction already imported")),
      node("c", ok(HASH)),
    ];
    const result = await broadcastRawTransaction(RAW, HASH, nodes);
    expect(result).toMatchObject({ ok: true, hash: HASH });
    for (const n of nodes) expect(n.calls).toContain("eth_sendRawTransaction");
  });

  it("takes 'nonce too low' as taken only when that node knows this very transaction", async () => {
    expect(
      await broadcastRawTransaction(RAW, HASH, [node("a", refusal(-32003, "nonce too low"), { hash: HASH })]),
    ).toMatchObject({ ok: true, hash: HASH, accepted: ["a"] });
    expect(
      await broadcastRawTransaction(RAW, HASH, [node("a", refusal(-32003, "nonce too low"), null)]),
    ).toEqual({
      ok: false,
      response: refusal(-32003, "nonce too low"),
    });
  });

  it("passes on a node's refusal when none took it, and a transport failure when none answered", async () => {
    const funds = refusal(-32003, "insufficient funds for gas * price + value");
    expect(
      await broadcastRawTransaction(RAW, HASH, [
        node("a", new RpcTransportError("down", "connection")),
        node("b", funds),
      ]),
    ).toEqual({ ok: false, response: funds });
    const down = await broadcastRawTransaction(RAW, HASH, [
      node("a", new RpcTransportError("slow", "timeout")),
    ]);
    expect(down).toMatchObject({ ok: false, failure: { reason: "timeout" } });
    expect(await broadcastRawTransaction(RAW, HASH, [])).toEqual({ ok: false });
  });

  it("answers at the first node that took it, without waiting for a slow one", async () => {
    const slow: BroadcastTarget = { name: "slow", call: () => new Promise(() => {}) };
    expect(await broadcastRawTransaction(RAW, HASH, [slow, node("fast", ok(HASH))])).toMatchObject({
      ok: true,
      accepted: ["fast"],
    });
  });
});
