/**
 * The fan-out floor of bench/gateway.ts: a bare `ws` server that answers every request as an eth_subscribe, with a subscription id,
 * holds one newHeads subscription to the node and forwards each notification's bytes to every subscriber, one
 * `send` each. No Node fan-out over `ws` can take less on the same machine, so the gateway's fan-out latency is
 * compared with it. Prints "listening <url>".
 *
 *   node --import tsx bench/bareWsFanOut.ts <nodeWsUrl>
 */
import type { AddressInfo } from "node:net";
import WebSocket, { WebSocketServer } from "ws";

const [nodeWsUrl] = process.argv.slice(2);
const subscribers = new Set<WebSocket>();

const node = new WebSocket(nodeWsUrl!);
await new Promise((resolve, reject) => node.once("open", resolve).once("error", reject));
const subscribed = new Promise((resolve) => node.once("message", resolve));
node.send(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_subscribe", params: ["newHeads"] }));
await subscribed;
// Every later message is a newHeads notification.
node.on("message", (data: Buffer, isBinary: boolean) => {
  for (const ws of subscribers) ws.send(data, { binary: isBinary });
});

let nextId = 0;
const server = new WebSocketServer({ host: "127.0.0.1", port: 0 });
server.on("connection", (ws) => {
  ws.on("message", (data: Buffer) => {
    const { id } = JSON.parse(String(data)) as { id: unknown };
    ws.send(JSON.stringify({ jsonrpc: "2.0", id, result: `0x${(++nextId).toString(16)}` }));
    subscribers.add(ws);
  });
  ws.on("close", () => subscribers.delete(ws));
});
server.on("listening", () => {
  console.log(`listening ws://127.0.0.1:${(server.address() as AddressInfo).port}`);
});
