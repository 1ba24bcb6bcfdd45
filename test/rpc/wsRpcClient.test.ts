import type { AddressInfo } from "node:net";
import { Socket } from "node:net";
import { afterEach, describe, expect, it, vi } from "vitest";
import WsSocket, { WebSocketServer } from "ws";
import type { WebSocket } from "ws";
import type { AnvilNode } from "../../src/devnet/anvil.js";
import { startAnvil } from "../../src/devnet/anvil.js";
import { backoffDelay } from "../../src/rpc/backoff.js";
import { parseBlockRef } from "../../src/rpc/blocks.js";
import { HttpRpcClient } from "../../src/rpc/httpRpcClient.js";
import { RpcTransportError } from "../../src/rpc/jsonRpc.js";
import { WsRpcClient } from "../../src/rpc/wsRpcClient.js";
import { waitFor } from "../support/waitFor.js";

const cleanup: Array<() => unknown> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

/** A node on a loopback port answering each frame with `answer` (closed after the test); resolves to its port. */
async function fakeNode(answer: (ws: WebSocket, data: Buffer) => void): Promise<number> {
  const server = new WebSocketServer({ host: "127.0.0.1", port: 0 });
  cleanup.push(() => new Promise((resolve) => server.close(resolve)));
  await new Promise((resolve) => server.once("listening", resolve));
  server.on("connection", (ws) => ws.on("message", (data: Buffer) => answer(ws, data)));
  return (server.address() as AddressInfo).port;
}

/** A client of the node on `port`, connected (closed after the test). */
async function connectedTo(port: number): Promise<WsRpcClient> {
  const client = new WsRpcClient({ url: `ws://127.0.0.1:${port}`, timeoutMs: 5_000 });
  cleanup.push(() => client.close());
  client.connect();
  await waitFor(() => client.connected, { what: "connection" });
  return client;
}

async function anvilNode(port = 0): Promise<AnvilNode> {
  const node = await startAnvil({
    name: "rpc-ws",
    chainId: 31_337,
    noMining: true,
    port,
    timestamp: 1_700_000_000,
  });
  cleanup.push(() => node.stop());
  return node;
}

/** A callInto call as a promise of what `read` makes of its answer's text (a throw in `read` fails the call). */
function readAnswer<T>(
  client: WsRpcClient,
  method: string,
  params: unknown[],
  timeoutMs: number,
  read: (text: string, ascii: boolean) => T,
): Promise<T> {
  return new Promise((resolve, reject) => {
    const sent = client.callInto(method, params, timeoutMs, {
      answered: (text, ascii) => resolve(read(text, ascii)),
      failed: reject,
    });
    if (!sent) reject(new Error("not sent"));
  });
}

describe("backoffDelay", () => {
  it("doubles up to the cap, with half of it jittered", () => {
    expect(backoffDelay(0, 100, 1_000, () => 0)).toBe(50);
    expect(backoffDelay(0, 100, 1_000, () => 1)).toBe(100);
    expect(backoffDelay(3, 100, 1_000, () => 0)).toBe(400);
    expect(backoffDelay(10, 100, 1_000, () => 1)).toBe(1_000);
  });
});

describe("WsRpcClient against anvil", () => {
  it("calls methods and receives newHeads", async () => {
    const node = await anvilNode();
    const client = new WsRpcClient({ url: node.wsUrl, timeoutMs: 5_000 });
    cleanup.push(() => client.close());
    const heads: number[] = [];
    client.subscribe(["newHeads"], (header) => heads.push(parseBlockRef(header)!.number));
    client.connect();
    await waitFor(() => client.connected, { what: "connection" });
    expect(await client.call("eth_chainId")).toBe("0x7a69");
    const http = new HttpRpcClient(node.httpUrl, 5_000);
    // The subscription is made asynchronously after open: mine until the first head arrives.
    await waitFor(async () => (await http.call("evm_mine"), heads.length > 0), { what: "first head" });
    const first = heads[0]!;
    await http.call("evm_mine");
    await http.call("evm_mine");
    await waitFor(() => heads.length >= 3, { what: "three heads" });
    expect(heads.slice(0, 3)).toEqual([first, first + 1, first + 2]);
  });

  it("gives answers as the node's text, matched to many calls sent in one turn, errors included", async () => {
    const node = await anvilNode();
    await new HttpRpcClient(node.httpUrl, 5_000).call("anvil_mine", ["0x5"]);
    const client = new WsRpcClient({ url: node.wsUrl, timeoutMs: 5_000 });
    cleanup.push(() => client.close());
    client.connect();
    await waitFor(() => client.connected, { what: "connection" });
    const texts = await Promise.all(
      [5, 3, 0, 4, 1, 2].map((n) => client.callText("eth_getBlockByNumber", [`0x${n}`, false])),
    );
    expect(texts.map((t) => (JSON.parse(t) as { result: { number: string } }).result.number)).toEqual([
      "0x5",
      "0x3",
      "0x0",
      "0x4",
      "0x1",
      "0x2",
    ]);
    const refused = JSON.parse(await client.callText("eth_getBalance", ["0x12"])) as {
      error: { code: number };
    };
    expect(refused.error.code).toBe(-32602);
  });

  it("sends the calls made in one turn in one write, and matches each answer to its call", async () => {
    const port = await fakeNode((ws, data) => {
      const { id } = JSON.parse(String(data)) as { id: number };
      ws.send(`{"jsonrpc":"2.0","id":${id},"result":"0x${id.toString(16)}"}`);
    });
    const client = await connectedTo(port);
    // What reaches the kernel: each flush of a socket's writes is one call of node:net's _writeGeneric.
    const flushes = vi.spyOn(Socket.prototype as unknown as { _writeGeneric: () => void }, "_writeGeneric");
    cleanup.push(() => flushes.mockRestore());
    const answers = await Promise.all(Array.from({ length: 50 }, () => client.callText("eth_chainId", [])));
    const toServer = flushes.mock.contexts.filter((socket) => (socket as Socket).remotePort === port);
    expect(toServer).toHaveLength(1);
    // Each answer is its own call's: ids are matched, not taken in order.
    for (const answer of answers) {
      const { id, result } = JSON.parse(answer) as { id: number; result: string };
      expect(result).toBe(`0x${id.toString(16)}`);
    }
    expect(new Set(answers).size).toBe(50);
  });

  it("reads answers larger than one read of its connection, and frames split across reads, whole", async () => {
    // Each answer several reads long (a read takes at most 64 KiB), its text its own: a part of one frame kept from an
    // earlier read and overwritten by a later one would show as another answer's bytes.
    const result = (id: number) => `0x${String(id % 10).repeat(150_000 + id * 997)}`;
    const port = await fakeNode((ws, data) => {
      const { id } = JSON.parse(String(data)) as { id: number };
      ws.send(`{"jsonrpc":"2.0","id":${id},"result":"${result(id)}"}`);
    });
    const client = await connectedTo(port);
    const answers = await Promise.all(Array.from({ length: 12 }, () => client.callText("eth_big", [])));
    for (const answer of answers) {
      const { id, result: got } = JSON.parse(answer) as { id: number; result: string };
      expect(got).toBe(result(id));
    }
    expect(new Set(answers).size).toBe(12);
  });

  it("writes each call as one masked frame the node's server reads, at every length, and text beyond ASCII through ws", async () => {
    const port = await fakeNode((ws, data) => {
      const { id, params } = JSON.parse(String(data)) as { id: number; params: [string] };
      ws.send(JSON.stringify({ jsonrpc: "2.0", id, result: params[0] }));
    });
    const client = await connectedTo(port);
    const sent = vi.spyOn(WsSocket.prototype, "send");
    cleanup.push(() => sent.mockRestore());
    // Texts across the lengths where a frame's length field changes form (125/126 and 65,535/65,536 bytes).
    const lengths = [
      ...Array.from({ length: 60 }, (_, i) => 40 + i),
      ...Array.from({ length: 60 }, (_, i) => 65_440 + i * 2),
    ];
    const texts = [...lengths.map((n) => "x".repeat(n)), "é ✓ \u{1F600}"];
    const answers = await Promise.all(texts.map((text) => client.call("eth_echo", [text])));
    expect(answers).toEqual(texts);
    // Only the text beyond ASCII went through ws's own framing (the node's answers are sent with ws too).
    const calls = sent.mock.calls.filter(([data]) => String(data).includes('"method":"eth_echo"'));
    expect(calls).toHaveLength(1);
  });

  it("gives a call its parsed result or the node's error, in either layout, and fails one whose answer is not JSON", async () => {
    const port = await fakeNode((ws, data) => {
      const { id, method } = JSON.parse(String(data)) as { id: number; method: string };
      if (method === "eth_result") ws.send(`{"jsonrpc":"2.0","id":${id},"result":{"a":[1]}}`);
      // The id after the result: not the layout matched without parsing.
      else if (method === "eth_late") ws.send(`{"jsonrpc":"2.0","result":"0x2","id":${id}}`);
      else if (method === "eth_refused")
        ws.send(`{"jsonrpc":"2.0","id":${id},"error":{"code":-32601,"message":"no such method"}}`);
      else ws.send(`{"jsonrpc":"2.0","id":${id},"result":`);
    });
    const client = await connectedTo(port);
    expect(await client.call("eth_result")).toEqual({ a: [1] });
    expect(await client.call("eth_late")).toBe("0x2");
    await expect(client.call("eth_refused")).rejects.toMatchObject({
      code: -32601,
      message: "no such method",
    });
    await expect(client.call("eth_cut")).rejects.toMatchObject({ reason: "malformed" });
    // Still usable.
    expect(await client.call("eth_result")).toEqual({ a: [1] });
  });

  it("times out each unanswered call at its own timeout, never sooner, while the others are answered", async () => {
    const port = await fakeNode((ws, data) => {
      const { id, method } = JSON.parse(String(data)) as { id: number; method: string };
      if (method === "eth_chainId") ws.send(`{"jsonrpc":"2.0","id":${id},"result":"0x1"}`);
    });
    const client = await connectedTo(port);
    const started = performance.now();
    const settledAt = (call: Promise<unknown>) =>
      call.then(
        () => ({ ok: true, at: performance.now() - started, error: undefined }),
        (error: unknown) => ({ ok: false, at: performance.now() - started, error }),
      );
    const late = settledAt(client.callText("eth_hang", [], 600));
    const soon = settledAt(client.callText("eth_hang", [], 200));
    const answered = await readAnswer(client, "eth_chainId", [], 100, (text) => JSON.parse(text) as unknown);
    expect(answered).toMatchObject({ result: "0x1" });
    // A sink that throws reading the answer is told its call failed.
    await expect(
      readAnswer(client, "eth_chainId", [], 100, () => {
        throw new Error("unreadable");
      }),
    ).rejects.toThrow("unreadable");
    const first = await soon;
    expect(first).toMatchObject({ ok: false, error: { reason: "timeout" } });
    expect(String((first.error as Error).message)).toContain("200 ms");
    expect(first.at).toBeGreaterThanOrEqual(200);
    const second = await late;
    expect(second).toMatchObject({ ok: false, error: { reason: "timeout" } });
    expect(second.at).toBeGreaterThanOrEqual(600);
    // Still usable after its calls timed out.
    expect(JSON.parse(await client.callText("eth_chainId", []))).toMatchObject({ result: "0x1" });
  });

  it("reads answers in UTF-8 beyond ASCII, and drops a connection whose frame is not UTF-8", async () => {
    const port = await fakeNode((ws, data) => {
      const { id, method } = JSON.parse(String(data)) as { id: number; method: string };
      if (method === "eth_text") ws.send(`{"jsonrpc":"2.0","id":${id},"result":"é ✓ \u{1F600}"}`);
      else if (method === "eth_ascii") ws.send(`{"jsonrpc":"2.0","id":${id},"result":"0x1"}`);
      // A text frame whose bytes are not UTF-8 (0xff never is).
      else
        ws.send(Buffer.from([...Buffer.from(`{"jsonrpc":"2.0","id":${id},"result":"`), 0xff, 0x22, 0x7d]), {
          binary: false,
        });
    });
    const client = new WsRpcClient({
      url: `ws://127.0.0.1:${port}`,
      timeoutMs: 5_000,
      reconnectBaseMs: 10_000,
    });
    const errors: Error[] = [];
    client.on("error", (error: Error) => errors.push(error));
    cleanup.push(() => client.close());
    client.connect();
    await waitFor(() => client.connected, { what: "connection" });
    expect(JSON.parse(await client.callText("eth_text", []))).toMatchObject({ result: "é ✓ \u{1F600}" });
    // Its reader is told the answer was not ASCII (an ASCII one is: it goes on to a client as Latin-1).
    expect(await readAnswer(client, "eth_text", [], 5_000, (text, ascii) => ({ text, ascii }))).toEqual({
      text: expect.stringContaining("é ✓ \u{1F600}") as string,
      ascii: false,
    });
    expect(await readAnswer(client, "eth_ascii", [], 5_000, (text, ascii) => ({ text, ascii }))).toEqual({
      text: expect.stringContaining('"result":"0x1"') as string,
      ascii: true,
    });
    await expect(client.callText("eth_garbled", [])).rejects.toMatchObject({ reason: "connection" });
    expect(errors.map((e) => e.message).join()).toContain("not UTF-8");
    expect(client.connected).toBe(false);
  });

  it("closes when idle only after the calls in flight are answered, and takes no new ones", async () => {
    const node = await anvilNode();
    const client = new WsRpcClient({ url: node.wsUrl, timeoutMs: 5_000, reconnectBaseMs: 10 });
    cleanup.push(() => client.close());
    client.connect();
    await waitFor(() => client.connected, { what: "connection" });
    const inFlight = client.callText("eth_chainId", []);
    client.closeWhenIdle();
    await expect(client.callText("eth_chainId", [])).rejects.toMatchObject({ reason: "connection" });
    // callInto says so at once, and never calls its sink.
    const told: string[] = [];
    const sink = { answered: () => told.push("answered"), failed: () => told.push("failed") };
    expect(client.callInto("eth_chainId", [], 1_000, sink)).toBe(false);
    expect(JSON.parse(await inFlight)).toMatchObject({ result: "0x7a69" });
    await waitFor(() => !client.connected, { what: "the socket closed" });
    expect(told).toEqual([]);
  });

  it("rejects calls while disconnected and times out unanswered calls", async () => {
    const client = new WsRpcClient({ url: "ws://127.0.0.1:1", timeoutMs: 500 });
    cleanup.push(() => client.close());
    client.connect();
    await expect(client.call("eth_chainId")).rejects.toBeInstanceOf(RpcTransportError);
  });

  it("reconnects after the node restarts and makes its subscriptions again", async () => {
    const first = await anvilNode();
    const client = new WsRpcClient({
      url: first.wsUrl,
      timeoutMs: 2_000,
      reconnectBaseMs: 50,
      reconnectMaxMs: 200,
    });
    cleanup.push(() => client.close());
    const heads: number[] = [];
    let resubscribed = 0;
    client.on("resubscribed", () => resubscribed++);
    client.on("error", () => undefined);
    client.subscribe(["newHeads"], (header) => heads.push(parseBlockRef(header)!.number));
    client.connect();
    await waitFor(() => resubscribed === 1, { what: "first subscription" });

    await first.stop();
    await waitFor(() => !client.connected, { what: "disconnect" });
    const second = await anvilNode(first.port);
    await waitFor(() => resubscribed === 2, { what: "subscription after reconnect", timeoutMs: 20_000 });
    await new HttpRpcClient(second.httpUrl, 5_000).call("evm_mine");
    await waitFor(() => heads.includes(1), { what: "a head from the restarted node" });
  });
});
