import { request } from "node:http";
import { gunzipSync, gzipSync } from "node:zlib";
import { JsonRpcProvider, Network } from "ethers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createWalletClient, http } from "viem";
import WebSocket from "ws";
import type { Devnet } from "../../src/devnet/devnet.js";
import { DEV_ACCOUNT } from "../../src/devnet/devTransactions.js";
import type { Gateway } from "../../src/gateway/gateway.js";
import { startTestDevnet } from "../support/devnet.js";
import { waitFor } from "../support/waitFor.js";
import { CHAIN_ID, NETWORK, startTestGateway, waitForServedHead } from "./support.js";
import type { Json } from "./support.js";

/** A POST as raw bytes both ways: what the client wrote and what the gateway wrote back, undecoded. */
function rawPost(
  url: string,
  body: string | Buffer,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Record<string, unknown>; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: "POST", headers: { "content-type": "application/json", ...headers } });
    req.on("response", (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () =>
        resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }),
      );
    });
    req.on("error", reject);
    req.end(body);
  });
}

/** Sends raw frames over WebSocket and collects the raw text of the answers. */
async function rawWsFrames(url: string, frames: string[], answers = frames.length): Promise<string[]> {
  const socket = new WebSocket(url);
  const received: string[] = [];
  socket.on("message", (data) => received.push(String(data)));
  await new Promise((resolve, reject) => {
    socket.once("open", resolve);
    socket.once("error", reject);
  });
  for (const frame of frames) socket.send(frame);
  await waitFor(() => received.length >= answers, { what: "WebSocket answers" });
  socket.close();
  return received;
}

const BIG_ID = "12345678901234567890";

describe("exact JSON-RPC, byte for byte", () => {
  let devnet: Devnet;
  let gateway: Gateway;
  let wsUrl: string;

  beforeAll(async () => {
    devnet = await startTestDevnet({
      networks: [{ name: NETWORK, chainId: CHAIN_ID, fullNodes: 1, lightNodes: 1 }],
    });
    for (let i = 0; i < 3; i++) await devnet.mine(NETWORK);
    ({ gateway, wsUrl } = await startTestGateway(devnet, { maxBatchLength: 12 }));
    await waitForServedHead(gateway, devnet);
  });

  afterAll(async () => {
    await gateway?.stop();
  });

  it("echoes every id as the client wrote it: big integers, 1.0, 1e2, strings, null", async () => {
    // Strings with escapes too, as geth echoes its raw id: "\u0041\/b" comes back so, not as "A/b".
    const escaped = ['"\\u0041\\/b"', '"caf\\u00e9 \\"q\\""', '"tab\\there"'];
    for (const id of [
      BIG_ID,
      "-98765432109876543210",
      "1.0",
      "1e2",
      "0.1",
      '"a-string"',
      "null",
      "7",
      ...escaped,
    ]) {
      for (const method of ["eth_blockNumber", "eth_getBalance", "eth_nosuchmethod"]) {
        const call = `{"jsonrpc":"2.0","id":${id},"method":"${method}","params":["${DEV_ACCOUNT}","latest"]}`;
        const single = (await rawPost(gateway.url, call)).body.toString();
        expect(single.startsWith(`{"jsonrpc":"2.0","id":${id},`), `${method} ${id}: ${single}`).toBe(true);
        const batch = (await rawPost(gateway.url, `[${call},${call.replace(id, "3")}]`)).body.toString();
        expect(batch.startsWith(`[{"jsonrpc":"2.0","id":${id},`), `batch ${method} ${id}: ${batch}`).toBe(
          true,
        );
        expect(batch).toContain(`{"jsonrpc":"2.0","id":3,`);
      }
    }
    const [overWs] = await rawWsFrames(wsUrl, [
      `{"jsonrpc":"2.0","id":${BIG_ID},"method":"eth_getBalance","params":["${DEV_ACCOUNT}","latest"]}`,
    ]);
    expect(overWs!.startsWith(`{"jsonrpc":"2.0","id":${BIG_ID},`)).toBe(true);
    const [escapedOverWs] = await rawWsFrames(wsUrl, [
      `{"jsonrpc":"2.0","id":${escaped[0]},"method":"eth_getBalance","params":["${DEV_ACCOUNT}","latest"]}`,
    ]);
    expect(escapedOverWs!.startsWith(`{"jsonrpc":"2.0","id":${escaped[0]},`)).toBe(true);
  });

  it("answers a batch over maxBatchLength as geth does: an array with one -32600", async () => {
    const calls = Array.from({ length: 13 }, (_, i) => ({
      jsonrpc: "2.0",
      id: i + 5,
      method: "eth_chainId",
    }));
    const answer = await rawPost(gateway.url, JSON.stringify(calls));
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body.toString())).toEqual([
      { jsonrpc: "2.0", id: 5, error: { code: -32600, message: "batch too large" } },
    ]);
    const [overWs] = await rawWsFrames(wsUrl, [JSON.stringify(calls)]);
    expect(JSON.parse(overWs!)).toEqual([
      { jsonrpc: "2.0", id: 5, error: { code: -32600, message: "batch too large" } },
    ]);
  });

  it("takes gzip request bodies and gzips answers for clients that ask", async () => {
    const calls = Array.from({ length: 4 }, (_, i) => ({
      jsonrpc: "2.0",
      id: i,
      method: "eth_getBlockByNumber",
      params: [`0x${i.toString(16)}`, false],
    }));
    const zipped = await rawPost(gateway.url, gzipSync(JSON.stringify(calls)), {
      "content-encoding": "gzip",
      "accept-encoding": "gzip, deflate",
    });
    expect(zipped.status).toBe(200);
    expect(zipped.headers["content-encoding"]).toBe("gzip");
    const blocks = JSON.parse(gunzipSync(zipped.body).toString()) as Json[];
    expect(blocks.map((b) => Number(b.result.number))).toEqual([0, 1, 2, 3]);
    // Not asked for: plain.
    const plain = await rawPost(gateway.url, JSON.stringify(calls));
    expect(plain.headers["content-encoding"]).toBeUndefined();
    expect(JSON.parse(plain.body.toString())).toEqual(blocks);
    // A body that is not gzip: a parse error, not a crash.
    const broken = await rawPost(gateway.url, "not gzip", { "content-encoding": "gzip" });
    expect(broken.status).toBe(400);
    expect(JSON.parse(broken.body.toString()).error.code).toBe(-32700);
    // A gzip bomb beyond maxBodyBytes once inflated: 413.
    const bomb = await rawPost(gateway.url, gzipSync(Buffer.alloc(2_000_000, 32)), {
      "content-encoding": "gzip",
    });
    expect(bomb.status).toBe(413);
    // An encoding the gateway does not take: 415, saying which it takes.
    const brotli = await rawPost(gateway.url, "{}", { "content-encoding": "br" });
    expect(brotli.status).toBe(415);
  });

  it("accepts the content types geth accepts", async () => {
    for (const type of [
      "application/jsonrequest",
      "application/json-rpc",
      "application/json; charset=utf-8",
    ]) {
      const answer = await rawPost(gateway.url, '{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}', {
        "content-type": type,
      });
      expect(answer.status, type).toBe(200);
      expect(JSON.parse(answer.body.toString()).result).toBe("0x7a69");
    }
    expect((await rawPost(gateway.url, "{}", { "content-type": "text/plain" })).status).toBe(415);
  });

  it("answers eth_accounts with [] as public endpoints do (ethers, viem)", async () => {
    const provider = new JsonRpcProvider(gateway.url, Network.from(CHAIN_ID), { staticNetwork: true });
    try {
      expect(await provider.listAccounts()).toEqual([]);
    } finally {
      provider.destroy();
    }
    const wallet = createWalletClient({ transport: http(gateway.url) });
    expect(await wallet.getAddresses()).toEqual([]);
  });

  it("writes exact numbers in its error messages", async () => {
    const answer = await rawPost(
      gateway.url,
      JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "eth_getLogs",
        params: [{ fromBlock: "0x1", toBlock: "0xffffffffffffffff" }],
      }),
    );
    const error = JSON.parse(answer.body.toString()).error;
    expect(error.code).toBe(-32602);
    expect(error.message).toContain("18446744073709551615");
    expect(answer.body.toString()).not.toMatch(/\d{17,}0{3}\b|e\+/);
  });

  it("gives the node's HTTP errors over WebSocket too", async () => {
    const calls = [
      { jsonrpc: "2.0", id: 1, method: "eth_getBalance", params: ["0x12", "latest"] },
      { jsonrpc: "2.0", id: 2, method: "net_peerCount", params: [] },
      { jsonrpc: "2.0", id: 3, method: "eth_getBalance", params: [DEV_ACCOUNT] },
    ];
    const overHttp = await Promise.all(
      calls.map(
        async (c) => JSON.parse((await rawPost(gateway.url, JSON.stringify(c))).body.toString()) as Json,
      ),
    );
    const overWs = (
      await rawWsFrames(
        wsUrl,
        calls.map((c) => JSON.stringify(c)),
      )
    ).map((t) => JSON.parse(t) as Json);
    overWs.sort((a, b) => a.id - b.id);
    expect(overWs).toEqual(overHttp);
    expect(JSON.stringify(overWs)).not.toContain("untagged enum");
  });
});
