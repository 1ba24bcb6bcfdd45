import { createServer, request } from "node:http";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { gunzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sendAnswer } from "../../../src/gateway/http/sendAnswer.js";
import type { Answer } from "../../../src/gateway/pipeline/answer.js";
import { keptResult, serializeBody } from "../../../src/gateway/rpc/serialize.js";
import { closeUpstreamPools, forward } from "../../../src/gateway/upstreams/forward.js";
import type { JsonRpcId, JsonRpcResponse } from "../../../src/rpc/jsonRpc.js";
import { ExactNumber, ExactString } from "../../../src/rpc/jsonRpc.js";

/**
 * What a client gets for an answer a node sent (forwarded as the node's text) or the cache kept: the same bytes and
 * content-length as the answer serialized and encoded as UTF-8, whatever its id, its characters, a batch or gzip.
 */
describe("an answer written to the client", () => {
  let node: Server;
  let nodeUrl: string;
  /** What the fake node answers next, as raw bytes. */
  let nodeAnswer: Buffer = Buffer.alloc(0);
  let gateway: Server;
  let gatewayUrl = "";
  /** What the gateway writes next. */
  let answered: Answer = { body: undefined };

  beforeAll(async () => {
    node = createServer((req, res) => {
      req.resume();
      req.on("end", () => res.writeHead(200, { "content-type": "application/json" }).end(nodeAnswer));
    });
    gateway = createServer((req, res) => {
      req.resume();
      req.on("end", () => sendAnswer(req, res, answered));
    });
    await new Promise<void>((resolve) => node.listen(0, "127.0.0.1", resolve));
    await new Promise<void>((resolve) => gateway.listen(0, "127.0.0.1", resolve));
    nodeUrl = `http://127.0.0.1:${(node.address() as AddressInfo).port}/`;
    gatewayUrl = `http://127.0.0.1:${(gateway.address() as AddressInfo).port}/`;
  });
  afterAll(async () => {
    await closeUpstreamPools();
    await new Promise((resolve) => node.close(resolve));
    await new Promise((resolve) => gateway.close(resolve));
  });

  /** The node's answer to a call with `id`, as the gateway forwards it (its result kept as the node's text). */
  async function forwarded(result: string, id: JsonRpcId): Promise<JsonRpcResponse> {
    nodeAnswer = Buffer.from(`{"jsonrpc":"2.0","id":1,"result":${result}}\n`);
    return forward(
      nodeUrl,
      { jsonrpc: "2.0", id, method: "eth_getBlockByNumber", params: ["0x3"] },
      5_000,
      true,
    );
  }

  function fetchAnswer(
    headers: Record<string, string> = {},
  ): Promise<{ headers: Record<string, unknown>; body: Buffer }> {
    return new Promise((resolve, reject) => {
      const req = request(gatewayUrl, { method: "POST", headers });
      req.on("response", (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => resolve({ headers: res.headers, body: Buffer.concat(chunks) }));
      });
      req.on("error", reject);
      req.end("{}");
    });
  }

  /** Writes `body` through sendAnswer and checks the bytes and length against its UTF-8 serialization. */
  async function expectWrittenAsSerialized(body: JsonRpcResponse | JsonRpcResponse[]): Promise<void> {
    const expected = Buffer.from(serializeBody(body), "utf8");
    answered = { body };
    const got = await fetchAnswer();
    expect(got.headers["content-encoding"]).toBeUndefined();
    expect(Number(got.headers["content-length"])).toBe(expected.length);
    expect(got.body.toString("hex")).toBe(expected.toString("hex"));
  }

  const block = (extraData: string) =>
    JSON.stringify({ number: "0x3", hash: `0x${"ab".repeat(32)}`, extraData, miner: "0x" + "0".repeat(40) });
  const ids: JsonRpcId[] = [
    7,
    null,
    "client-id",
    "é✓",
    new ExactNumber("12345678901234567890"),
    new ExactString('"a\\u0041"', "aA"),
    new ExactString('"caf\\u00e9 ✓"', "café ✓"),
  ];

  it.each(ids)("a forwarded ASCII block, id %s", async (id) => {
    await expectWrittenAsSerialized(await forwarded(block("0x6869"), id));
  });

  it.each(ids)("a forwarded result beyond ASCII (UTF-8 from the node), id %s", async (id) => {
    // A string result with two-, three- and four-byte characters, and an escaped one.
    await expectWrittenAsSerialized(await forwarded('"é ✓ \u{1F600} \\u00e9"', id));
    await expectWrittenAsSerialized(await forwarded(block("hé ✓"), id));
  });

  it("a batch mixing forwarded answers (ASCII and not), a cache hit and an error", async () => {
    const hit: JsonRpcResponse = { jsonrpc: "2.0", id: 3, result: keptResult(block("0x01")) };
    const error: JsonRpcResponse = { jsonrpc: "2.0", id: 4, error: { code: -32601, message: "no é" } };
    const ascii = await forwarded(block("0x6869"), 1);
    const beyond = await forwarded(block("✓"), "é");
    const asciiString = await forwarded(block("0x02"), new ExactString('"s\\u0041"', "sA"));
    await expectWrittenAsSerialized([ascii, hit]);
    await expectWrittenAsSerialized([ascii, hit, asciiString]);
    await expectWrittenAsSerialized([hit, beyond, ascii]);
    await expectWrittenAsSerialized([ascii, error]);
    await expectWrittenAsSerialized([await forwarded(block("0x6869"), "é✓"), hit]);
  });

  it("a cache hit asked for again and again, with the same id or another: the same bytes every time, gzip too", async () => {
    const transactions = Array.from({ length: 60 }, (_, i) => `"0x${i.toString(16).padStart(64, "0")}"`);
    const large = keptResult(`{"number":"0x3","transactions":[${transactions.join(",")}]}`);
    const small = keptResult(block("0x6869"));
    for (const id of [7, 7, 7, "client-id", "client-id", null, null, 8, "é✓", "é✓"] as JsonRpcId[]) {
      await expectWrittenAsSerialized({ jsonrpc: "2.0", id, result: small });
      const body: JsonRpcResponse = { jsonrpc: "2.0", id, result: large };
      answered = { body };
      const zipped = await fetchAnswer({ "accept-encoding": "gzip" });
      expect(zipped.headers["content-encoding"]).toBe("gzip");
      expect(gunzipSync(zipped.body).toString("hex")).toBe(Buffer.from(serializeBody(body)).toString("hex"));
    }
  });

  it("a large forwarded block to a client that takes gzip: compressed, the same bytes once inflated", async () => {
    const transactions = Array.from({ length: 60 }, (_, i) => `"0x${i.toString(16).padStart(64, "0")}"`);
    for (const extraData of ["0x6869", "é ✓"]) {
      const result = `{"number":"0x3","extraData":"${extraData}","transactions":[${transactions.join(",")}]}`;
      for (const id of [7, "é✓", new ExactString('"a\\u0041"', "aA")] as JsonRpcId[]) {
        const body = await forwarded(result, id);
        const expected = Buffer.from(serializeBody(body), "utf8");
        expect(expected.length).toBeGreaterThan(1024);
        answered = { body };
        const zipped = await fetchAnswer({ "accept-encoding": "gzip" });
        expect(zipped.headers["content-encoding"]).toBe("gzip");
        expect(Number(zipped.headers["content-length"])).toBe(zipped.body.length);
        expect(gunzipSync(zipped.body).toString("hex")).toBe(expected.toString("hex"));
        await expectWrittenAsSerialized(body);
      }
    }
  });
});
