import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AnvilNode } from "../../src/devnet/anvil.js";
import { startAnvil } from "../../src/devnet/anvil.js";
import { parseBlockRef } from "../../src/rpc/blocks.js";
import { HttpRpcClient } from "../../src/rpc/httpRpcClient.js";
import { RpcError, RpcTransportError } from "../../src/rpc/jsonRpc.js";

let anvil: AnvilNode;

beforeAll(async () => {
  anvil = await startAnvil({ name: "rpc-http", chainId: 31_337, noMining: true });
  await new HttpRpcClient(anvil.httpUrl, 5_000).call("evm_mine");
});
afterAll(() => anvil?.stop());

describe("HttpRpcClient against anvil", () => {
  it("calls a method and parses a block", async () => {
    const client = new HttpRpcClient(anvil.httpUrl, 5_000);
    expect(await client.call("eth_chainId")).toBe("0x7a69");
    const block = parseBlockRef(await client.call("eth_getBlockByNumber", ["latest", false]));
    expect(block?.number).toBe(1);
    expect(block?.hash).toMatch(/^0x[0-9a-f]{64}$/);
  });

  it("answers a batch in call order, with per-call errors", async () => {
    const client = new HttpRpcClient(anvil.httpUrl, 5_000);
    const [chainId, missing, number] = await client.batch([
      { method: "eth_chainId" },
      { method: "no_suchMethod" },
      { method: "eth_blockNumber" },
    ]);
    expect(chainId).toBe("0x7a69");
    expect(missing).toBeInstanceOf(RpcError);
    expect((missing as RpcError).code).toBe(-32601);
    expect(number).toBe("0x1");
  });

  it("turns a JSON-RPC error into RpcError", async () => {
    const client = new HttpRpcClient(anvil.httpUrl, 5_000);
    await expect(client.call("eth_getBlockByNumber", ["not-a-tag", false])).rejects.toBeInstanceOf(RpcError);
  });

  it("reports a refused connection as a transport error", async () => {
    const client = new HttpRpcClient("http://127.0.0.1:1", 1_000);
    const error = await client.call("eth_chainId").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RpcTransportError);
    expect((error as RpcTransportError).reason).toBe("connection");
  });
});

describe("HttpRpcClient against a misbehaving server", () => {
  const server = createServer((req, res) => {
    if (req.url === "/hang") return; // never answers
    if (req.url === "/html")
      return void res.writeHead(502, { "content-type": "text/html" }).end("<html>bad gateway</html>");
    res.writeHead(200, { "content-type": "application/json" }).end('{"not":"json-rpc"}');
  });
  let base = "";
  beforeAll(async () => {
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => {
    server.closeAllConnections();
    server.close();
  });

  it.each([
    ["/hang", "timeout"],
    ["/html", "http-status"],
    ["/other", "malformed"],
  ])("%s is a %s transport error", async (path, reason) => {
    const error = await new HttpRpcClient(base + path, 300).call("eth_chainId").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RpcTransportError);
    expect((error as RpcTransportError).reason).toBe(reason);
  });
});
