/**
 * The gateway's newHeads send loop alone: the time one block's notification takes to be written to N subscribers'
 * sockets (the synchronous loop the gateway's event loop spends per block), per subscriber, four ways in one run:
 *
 * - one buffer, one write: HeadsNotification.writeTo, what the gateway does (the frame, framed once per block, with
 *   the subscriber's id written in, one socket write; the same buffer again for the next subscriber when the kernel
 *   took it whole);
 * - pre-framed parts, corked: the same frame-header-and-prefix and tail buffers to every socket around the
 *   subscription's id bytes, cork, three writes, uncork (the gateway's loop before);
 * - copy + ws.send: a copy of the notification per subscriber with its id written in, framed by `ws` (earlier);
 * - shared + ws.send: the same buffer to every subscriber through `ws` (bench/bareWsFanOut.ts: no id at all).
 *
 * Subscribers are real `ws` clients on loopback in the same process: they read only after the loop has run, so the
 * loop's time is the server's alone. Rounds alternate the ways; medians are printed with the ratio to the bare
 * `ws` loop. Bounded: N connections, a few rounds.
 *
 *   npm run bench:fan-out-loop -- [subscribers=5000] [rounds=15]
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { Duplex } from "node:stream";
import WebSocket, { WebSocketServer } from "ws";
import {
  HeadsNotification,
  newSubscriptionId,
  subscriptionIdBytes,
} from "../src/gateway/ws/headsNotification.js";
import { textFrameHeader } from "../src/gateway/ws/textFrame.js";

const SUBSCRIBERS = Number(process.argv[2] ?? 5_000);
const ROUNDS = Number(process.argv[3] ?? 15);

/** A newHeads header the size anvil sends (about 600 bytes of JSON). */
const header = JSON.stringify({
  number: "0x1c9c380",
  hash: `0x${"ab".repeat(32)}`,
  parentHash: `0x${"cd".repeat(32)}`,
  sha3Uncles: `0x${"1d".repeat(32)}`,
  miner: `0x${"00".repeat(20)}`,
  stateRoot: `0x${"ef".repeat(32)}`,
  transactionsRoot: `0x${"56".repeat(32)}`,
  receiptsRoot: `0x${"78".repeat(32)}`,
  logsBloom: `0x${"0".repeat(512)}`,
  difficulty: "0x0",
  gasLimit: "0x1c9c380",
  gasUsed: "0x5208",
  timestamp: "0x6553f100",
  extraData: "0x",
  mixHash: `0x${"9a".repeat(32)}`,
  nonce: "0x0000000000000000",
  baseFeePerGas: "0x7",
});

const server = createServer();
const wss = new WebSocketServer({ noServer: true });
const accepted: Array<{ ws: WebSocket; socket: Duplex; id: string; idBytes: Buffer }> = [];
server.on("upgrade", (req, socket, head) =>
  wss.handleUpgrade(req, socket, head, (ws) => {
    const id = newSubscriptionId();
    accepted.push({ ws, socket, id, idBytes: subscriptionIdBytes(id) });
  }),
);
await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
const url = `ws://127.0.0.1:${(server.address() as AddressInfo).port}`;

let received = 0;
const clients: WebSocket[] = [];
for (let i = 0; i < SUBSCRIBERS; i += 250) {
  await Promise.all(
    Array.from({ length: Math.min(250, SUBSCRIBERS - i) }, async (_, j) => {
      const client = new WebSocket(url, { localAddress: `127.0.0.${2 + ((i + j) % 8)}` });
      clients.push(client);
      client.on("message", () => received++);
      await new Promise((resolve, reject) => client.once("open", resolve).once("error", reject));
    }),
  );
}
const deadline = Date.now() + 60_000;
while (accepted.length < SUBSCRIBERS && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));

const notification = new HeadsNotification(header);
const PREFIX_LENGTH = '{"jsonrpc":"2.0","method":"eth_subscription","params":{"subscription":"'.length;
const template = Buffer.from(notification.textFor(accepted[0]!.id), "utf8");
const head = Buffer.from(template.subarray(0, PREFIX_LENGTH));
const tail = Buffer.from(template.subarray(PREFIX_LENGTH + accepted[0]!.id.length));
const frameHeader = textFrameHeader(template.length);
const headWithFrame = Buffer.concat([frameHeader, head]);
const ways: Record<string, () => void> = {
  "one buffer, one write (now)": () => {
    for (const s of accepted) notification.writeTo(s.socket, s.idBytes);
  },
  "parts, corked (before)": () => {
    for (const s of accepted) {
      s.socket.cork();
      s.socket.write(headWithFrame);
      s.socket.write(s.idBytes);
      s.socket.write(tail);
      s.socket.uncork();
    }
  },
  "copy + ws.send (earlier)": () => {
    for (const s of accepted) {
      const bytes = Buffer.allocUnsafe(template.length);
      template.copy(bytes);
      bytes.write(s.id, PREFIX_LENGTH, s.id.length, "latin1");
      s.ws.send(bytes, { binary: false });
    }
  },
  "shared + ws.send (bare ws)": () => {
    for (const s of accepted) s.ws.send(template, { binary: false });
  },
};

/** Per subscriber, in microseconds: wall time, and the CPU time spent in user space and in the kernel. */
const times: Record<string, { wall: number[]; user: number[]; system: number[] }> = {};
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, loop] of Object.entries(ways)) {
    const target = received + SUBSCRIBERS;
    const cpu = process.cpuUsage();
    const started = performance.now();
    loop();
    const wall = (performance.now() - started) * 1000;
    const { user, system } = process.cpuUsage(cpu);
    const t = (times[name] ??= { wall: [], user: [], system: [] });
    t.wall.push(wall / SUBSCRIBERS);
    t.user.push(user / SUBSCRIBERS);
    t.system.push(system / SUBSCRIBERS);
    // Every subscriber reads the block before the next loop (bounded).
    const roundDeadline = Date.now() + 30_000;
    while (received < target && Date.now() < roundDeadline) await new Promise((r) => setImmediate(r));
    if (received < target) throw new Error(`${target - received} notifications did not arrive`);
  }
}
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const bare = times["shared + ws.send (bare ws)"]!;
console.log(
  `send loop for one block, ${SUBSCRIBERS} subscribers, median of ${ROUNDS} rounds, per subscriber ` +
    "(wall time moves with the machine's load; CPU time less):",
);
for (const [name, t] of Object.entries(times)) {
  const [wall, user, system] = [median(t.wall), median(t.user), median(t.system)];
  console.log(
    `  ${name.padEnd(27)} ${wall.toFixed(2)} us (${(wall / median(bare.wall)).toFixed(2)}x bare ws); CPU user ` +
      `${user.toFixed(2)} us (${(user / median(bare.user)).toFixed(2)}x), kernel ${system.toFixed(2)} us`,
  );
}
for (const client of clients) client.terminate();
wss.close();
server.close();
