import { createServer } from "node:http";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RawResult, serializeBody, serializeResponse } from "../../../src/gateway/rpc/serialize.js";
import { closeUpstreamPools, forward } from "../../../src/gateway/upstreams/forward.js";
import { HeadsNotification, newSubscriptionId } from "../../../src/gateway/ws/headsNotification.js";

const block = {
  number: "0x3",
  hash: `0x${"ab".repeat(32)}`,
  extraData: "0x",
  logsBloom: `0x${"0".repeat(512)}`,
};

describe("forwarded answers are written back as the node's bytes, with the client's id", () => {
  let server: Server;
  let url: string;
  /** What the fake node answers next, as raw text. */
  let answer = "";

  beforeAll(async () => {
    server = createServer((req, res) => {
      req.resume();
      req.on("end", () => res.writeHead(200, { "content-type": "application/json" }).end(answer));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  });
  afterAll(async () => {
    await closeUpstreamPools();
    await new Promise((resolve) => server.close(resolve));
  });

  const call = (id: string | number | null) => ({
    jsonrpc: "2.0" as const,
    id,
    method: "eth_getBlockByNumber",
    params: ["0x3", false],
  });

  it.each([7, "client-id", null])("keeps the result's text and puts in the client's id %j", async (id) => {
    answer = `{"jsonrpc":"2.0","id":1,"result":${JSON.stringify(block)}}\n`;
    const response = await forward(url, call(id), 1_000, true);
    expect("result" in response && response.result).toBeInstanceOf(RawResult);
    expect(JSON.parse(serializeResponse(response))).toEqual({ jsonrpc: "2.0", id, result: block });
    // Any other serializer still sees the value.
    expect(JSON.parse(JSON.stringify(response))).toEqual({ jsonrpc: "2.0", id, result: block });
  });

  it("parses answers laid out differently, and errors, as before", async () => {
    answer = `{"id":1,"result":${JSON.stringify(block)},"jsonrpc":"2.0"}`;
    expect(await forward(url, call(9), 1_000, true)).toEqual({ jsonrpc: "2.0", id: 9, result: block });
    answer = '{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"header not found"}}';
    expect(await forward(url, call(9), 1_000, true)).toEqual({
      jsonrpc: "2.0",
      id: 9,
      error: { code: -32000, message: "header not found" },
    });
  });

  it("gives parsed values when the gateway reads the result itself", async () => {
    answer = `{"jsonrpc":"2.0","id":1,"result":${JSON.stringify(block)}}`;
    expect(await forward(url, call(1), 1_000)).toEqual({ jsonrpc: "2.0", id: 1, result: block });
  });

  it("refuses an answer that is not JSON-RPC", async () => {
    answer = "<html>bad gateway</html>";
    await expect(forward(url, call(1), 1_000, true)).rejects.toMatchObject({ reason: "malformed" });
  });

  it("serializes a batch of raw and plain answers", () => {
    const text = serializeBody([
      { jsonrpc: "2.0", id: 1, result: new RawResult('{"a":[1,2]}') },
      { jsonrpc: "2.0", id: "x", result: "0x10" },
      { jsonrpc: "2.0", id: null, error: { code: -32600, message: "invalid request" } },
    ]);
    expect(JSON.parse(text)).toEqual([
      { jsonrpc: "2.0", id: 1, result: { a: [1, 2] } },
      { jsonrpc: "2.0", id: "x", result: "0x10" },
      { jsonrpc: "2.0", id: null, error: { code: -32600, message: "invalid request" } },
    ]);
  });
});

describe("newHeads notification bytes", () => {
  it("are the notification of each subscriber's id, from one encoding", () => {
    const header = { ...block, extraData: "0x6869 é" };
    const notification = new HeadsNotification(JSON.stringify(header));
    for (const id of [newSubscriptionId(), newSubscriptionId()]) {
      expect(JSON.parse(notification.textFor(id))).toEqual({
        jsonrpc: "2.0",
        method: "eth_subscription",
        params: { subscription: id, result: header },
      });
    }
  });
});
