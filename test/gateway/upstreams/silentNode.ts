import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { onTestFinished } from "vitest";
import { WebSocketServer } from "ws";

export const CHAIN_ID = 31337;
export const hex = (n: number) => `0x${n.toString(16)}`;
export const hashOf = (n: number) => `0x${n.toString(16).padStart(64, "0")}`;

/** Block `number` of the one chain the fake nodes share. */
export const blockAt = (number: number) => ({
  number: hex(number),
  hash: hashOf(number),
  parentHash: hashOf(Math.max(0, number - 1)),
  timestamp: hex(number),
});

type Call = { id: number; method: string; params?: unknown[] };

/**
 * A node over HTTP and WebSocket whose newHeads never fires (no block is announced), at `state.head` (5 unless the
 * test moves it); counts the head reads (`eth_getBlockByNumber` "latest") it gets over each. While `state.down`, it
 * drops every HTTP request and WebSocket unanswered, as a node that died.
 */
export async function silentNode() {
  const state = { head: 5, down: false, httpHeadReads: 0, wsHeadReads: 0 };
  const answer = (call: Call, via: "http" | "ws") => {
    const tag = call.params?.[0];
    if (call.method === "eth_getBlockByNumber" && tag === "latest") {
      if (via === "http") state.httpHeadReads++;
      else state.wsHeadReads++;
    }
    const height = tag === "latest" ? state.head : typeof tag === "string" ? Number.parseInt(tag, 16) : NaN;
    const result =
      call.method === "eth_chainId"
        ? hex(CHAIN_ID)
        : call.method === "eth_subscribe"
          ? "0x1"
          : call.method === "eth_getBlockByNumber" && height <= state.head
            ? blockAt(height)
            : null;
    return { jsonrpc: "2.0", id: call.id, result };
  };
  const server = createServer((req, res) => {
    if (state.down) return void req.socket.destroy();
    let body = "";
    req.on("data", (chunk: Buffer) => (body += chunk.toString()));
    req.on("end", () => {
      const parsed = JSON.parse(body) as Call | Call[];
      res.writeHead(200, { "content-type": "application/json" });
      res.end(
        JSON.stringify(Array.isArray(parsed) ? parsed.map((c) => answer(c, "http")) : answer(parsed, "http")),
      );
    });
  });
  const sockets = new WebSocketServer({ server });
  sockets.on("connection", (socket) => {
    if (state.down) return void socket.terminate();
    socket.on("message", (data) => {
      if (state.down) return void socket.terminate();
      socket.send(JSON.stringify(answer(JSON.parse(String(data)) as Call, "ws")));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  onTestFinished(async () => {
    for (const client of sockets.clients) client.terminate();
    sockets.close();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });
  const address = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    httpUrl: `http://${address}`,
    wsUrl: `ws://${address}`,
    state,
    /** Drops every connection and answers nothing until `up`. */
    down: () => {
      state.down = true;
      for (const client of sockets.clients) client.terminate();
      server.closeAllConnections();
    },
  };
}
