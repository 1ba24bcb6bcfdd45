import { connect } from "node:net";
import type { Registry } from "prom-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import type { Devnet } from "../../src/devnet/devnet.js";
import { DEV_ACCOUNT } from "../../src/devnet/devTransactions.js";
import type { Gateway } from "../../src/gateway/gateway.js";
import { startTestDevnet } from "../support/devnet.js";
import { waitFor } from "../support/waitFor.js";
import { CHAIN_ID, NETWORK, post, rawWs, startTestGateway, waitForServedHead } from "./support.js";
import type { Json } from "./support.js";

const MAX_BODY = 64 * 1024;
const chainId = { jsonrpc: "2.0", id: 1, method: "eth_chainId" };

/** The value of one gauge series in the registry, 0 when absent. */
async function gauge(registry: Registry, name: string): Promise<number> {
  const metric = await registry.getSingleMetric(name)?.get();
  return metric?.values.reduce((sum, v) => sum + v.value, 0) ?? 0;
}

describe("bad input of every kind: the right error, and the gateway stays up", () => {
  let devnet: Devnet;
  let gateway: Gateway;
  let registry: Registry;
  let wsUrl: string;
  const cleanup: Array<() => unknown> = [];

  beforeAll(async () => {
    devnet = await startTestDevnet({
      networks: [{ name: NETWORK, chainId: CHAIN_ID, fullNodes: 1, lightNodes: 1 }],
    });
    await devnet.mine(NETWORK);
    ({ gateway, registry, wsUrl } = await startTestGateway(devnet, {
      maxBodyBytes: MAX_BODY,
      maxBufferedBytes: 1024,
      maxInFlightPerConnection: 4,
      requestTimeout: "500ms",
    }));
    await waitForServedHead(gateway, devnet);
  });

  afterAll(async () => {
    for (const fn of cleanup.reverse()) await fn();
    await gateway?.stop();
  });

  const stillServing = async () =>
    expect((await post(gateway.url, chainId)).body.result).toBe(`0x${CHAIN_ID.toString(16)}`);

  it.each<[string, unknown, number, number]>([
    ["malformed JSON", '{"jsonrpc":"2.0",', 200, -32700],
    ["a bare string", '"eth_chainId"', 200, -32600],
    ["wrong jsonrpc version", { jsonrpc: "1.0", id: 1, method: "eth_chainId" }, 200, -32600],
    ["no jsonrpc member", { id: 1, method: "eth_chainId" }, 200, -32600],
    ["missing method", { jsonrpc: "2.0", id: 1 }, 200, -32600],
    ["a method that is not a string", { jsonrpc: "2.0", id: 1, method: 7 }, 200, -32600],
    [
      "params that are neither array nor object",
      { jsonrpc: "2.0", id: 1, method: "eth_chainId", params: "x" },
      200,
      -32600,
    ],
    ["an id that is an object", { jsonrpc: "2.0", id: {}, method: "eth_chainId" }, 200, -32600],
    ["an unknown method", { jsonrpc: "2.0", id: 1, method: "eth_doesNotExist", params: [] }, 200, -32601],
    [
      "wrong params for a method",
      { jsonrpc: "2.0", id: 1, method: "eth_getBalance", params: ["0x12"] },
      200,
      -32602,
    ],
    ["an empty batch", "[]", 200, -32600],
    ["a batch over the limit", Array(101).fill(chainId), 200, -32600],
  ])("%s", async (_what, body, status, code) => {
    const answer = await post(gateway.url, body);
    expect(answer.status).toBe(status);
    // A batch over the limit is answered as geth does: an array holding the one error.
    expect((Array.isArray(answer.body) ? answer.body[0] : answer.body).error.code).toBe(code);
    expect(JSON.stringify(answer.body)).not.toMatch(/\bat .*\.(ts|js):\d+/);
    await stillServing();
  });

  it("answers each bad item of a batch on its own and the good ones normally", async () => {
    const answer = await post(gateway.url, [chainId, 1, { jsonrpc: "2.0", id: 3 }]);
    expect(answer.body.map((r: Json) => r.result ?? r.error.code)).toEqual([
      `0x${CHAIN_ID.toString(16)}`,
      -32600,
      -32600,
    ]);
  });

  it("refuses a body over the limit with 413, declared or streamed without a length", async () => {
    expect((await post(gateway.url, `[${" ".repeat(MAX_BODY)}]`)).status).toBe(413);
    const chunked = await fetch(gateway.url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: new ReadableStream({
        start(controller) {
          for (let i = 0; i < 8; i++) controller.enqueue(new TextEncoder().encode(" ".repeat(16 * 1024)));
          controller.close();
        },
      }),
      duplex: "half",
    } as RequestInit);
    expect(chunked.status).toBe(413);
    await stillServing();
  });

  it("disconnects a client that sends half a request and stalls, after requestTimeout", async () => {
    const url = new URL(gateway.url);
    const socket = connect(Number(url.port), url.hostname);
    cleanup.push(() => socket.destroy());
    let answer = "";
    socket.on("data", (chunk) => (answer += String(chunk)));
    const closed = new Promise<number>((resolve) => socket.once("close", () => resolve(Date.now())));
    await new Promise((resolve) => socket.once("connect", resolve));
    const started = Date.now();
    socket.write(
      "POST / HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{",
    );
    const at = await closed;
    expect(at - started).toBeGreaterThanOrEqual(400);
    expect(at - started).toBeLessThan(5_000);
    expect(answer).toMatch(/^HTTP\/1\.1 408/);
    await stillServing();
  });

  it("stays up when clients reset their connections in the middle of a body", async () => {
    const url = new URL(gateway.url);
    for (let i = 0; i < 20; i++) {
      const socket = connect(Number(url.port), url.hostname);
      socket.on("error", () => {});
      await new Promise((resolve) => socket.once("connect", resolve));
      socket.write(
        'POST / HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{"jsonrpc":',
      );
      // Let the gateway start reading the body, then reset (RST, not FIN).
      await new Promise((resolve) => setImmediate(resolve));
      socket.resetAndDestroy();
      await new Promise((resolve) => socket.once("close", resolve));
    }
    await stillServing();
  });

  it("answers binary WebSocket frames with -32600 and keeps the connection", async () => {
    const ws = await rawWs(wsUrl);
    cleanup.push(() => ws.close());
    ws.socket.send(Buffer.from([0xde, 0xad, 0xbe, 0xef]), { binary: true });
    await waitFor(() => ws.messages.find((m) => m.error?.code === -32600), { what: "an invalid request" });
    expect((await ws.call("eth_chainId")).result).toBe(`0x${CHAIN_ID.toString(16)}`);
  });

  it("closes a connection sending an oversized frame with 1009, and no other", async () => {
    const bystander = await rawWs(wsUrl);
    cleanup.push(() => bystander.close());
    const ws = await rawWs(wsUrl);
    const closed = new Promise<number>((resolve) => ws.socket.once("close", resolve));
    ws.socket.send(JSON.stringify({ ...chainId, params: ["x".repeat(MAX_BODY)] }));
    expect(await closed).toBe(1009);
    expect((await bystander.call("eth_chainId")).result).toBe(`0x${CHAIN_ID.toString(16)}`);
  });

  it("cuts off a client that never reads, and only that one", async () => {
    const bystander = await rawWs(wsUrl);
    cleanup.push(() => bystander.close());
    const sleeper = new WebSocket(wsUrl);
    cleanup.push(() => sleeper.terminate());
    await new Promise((resolve, reject) => sleeper.once("open", resolve).once("error", reject));
    sleeper.pause();
    const cutOff = () =>
      registry
        .getSingleMetric("lightfleet_gateway_ws_disconnects_total")
        ?.get()
        .then((m) => m.values.some((v) => v.labels.reason === "slow-consumer" && v.value > 0));
    // Each frame is a small batch of bad items: 100 error answers (~9 KB) back for ~200 bytes sent, answered by the
    // gateway itself. The kernel buffers fill, then the gateway's queue passes 1 KiB and the client is dropped.
    const frame = JSON.stringify(Array(100).fill(1));
    for (let i = 0; i < 5_000 && !(await cutOff()); i++) {
      if (sleeper.readyState !== WebSocket.OPEN) break;
      sleeper.send(frame);
      if (i % 50 === 49) await new Promise((resolve) => setImmediate(resolve));
    }
    await waitFor(cutOff, { what: "the slow consumer to be cut off" });
    expect((await bystander.call("eth_chainId")).result).toBe(`0x${CHAIN_ID.toString(16)}`);
  });

  it("answers a flood of calls on one connection with at most maxInFlightPerConnection of them at the nodes", async () => {
    const ws = await rawWs(wsUrl);
    cleanup.push(() => ws.close());
    let peak = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        peak = Math.max(peak, await gauge(registry, "lightfleet_gateway_upstream_in_flight"));
        await new Promise((resolve) => setImmediate(resolve));
      }
    })();
    const calls = 500;
    for (let id = 1; id <= calls; id++)
      ws.socket.send(
        JSON.stringify({ jsonrpc: "2.0", id, method: "eth_getBalance", params: [DEV_ACCOUNT, "latest"] }),
      );
    await waitFor(() => ws.messages.filter((m) => typeof m.id === "number" && m.result).length === calls, {
      what: `${calls} answers`,
    });
    sampling = false;
    await sampler;
    expect(peak).toBeGreaterThan(0);
    expect(peak).toBeLessThanOrEqual(4);
  });

  it("survives 1,000 connections opened and dropped, WebSocket and raw TCP, and holds no state for them", async () => {
    const before = await gauge(registry, "lightfleet_gateway_ws_connections");
    const url = new URL(gateway.url);
    for (let round = 0; round < 10; round++) {
      await Promise.all(
        Array.from({ length: 50 }, async (_, i) => {
          if (i % 2 === 0) {
            const socket = connect(Number(url.port), url.hostname);
            socket.on("error", () => {});
            await new Promise((resolve) => socket.once("connect", resolve).once("error", resolve));
            socket.write("POST / HTTP/1.1\r\nhost: x\r\ncontent-length: 100\r\n\r\n{");
            socket.destroy();
            return;
          }
          const ws = new WebSocket(wsUrl);
          ws.on("error", () => {});
          await new Promise((resolve) => ws.once("open", resolve).once("error", resolve));
          if (i % 4 === 1)
            ws.send(JSON.stringify({ ...chainId, method: "eth_subscribe", params: ["newHeads"] }));
          ws.terminate();
        }),
      );
    }
    await waitFor(async () => (await gauge(registry, "lightfleet_gateway_ws_connections")) === before, {
      what: "every dropped WebSocket to be forgotten",
    });
    await stillServing();
  });
});
