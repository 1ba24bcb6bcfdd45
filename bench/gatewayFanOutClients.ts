/**
 * The subscriber side of bench/gateway.ts's fan-out run, in its own process so that parsing 5,000 notifications does
 * not compete with the gateway for the same event loop: subscribes to newHeads directly on the node (the reference
 * time of each block) and through N WebSockets to the gateway, prints "ready", records when each notification
 * arrives (epoch ms), prints "all <hash>" once every subscriber has a block, and on stdin "done" prints {announced:
 * {hash: at}, arrivals: {hash: [at, ...]}} as JSON on a line of its own and exits. The reference is taken here, not in the gateway's process, where it would wait for the gateway's own work.
 * Connections come from `sources` loopback addresses from 127.0.0.<first> on, so tens of thousands of them (and the
 * TIME_WAIT ports of earlier runs) never run out of one address's ephemeral ports.
 *
 *   node --import tsx bench/gatewayFanOutClients.ts <gatewayWsUrl> <count> <nodeWsUrl> [first=1] [sources=1]
 */
import WebSocket from "ws";

const [wsUrl, countArg, nodeWsUrl, firstArg, sourcesArg] = process.argv.slice(2);
const count = Number(countArg);
const first = Number(firstArg ?? 1);
const sources = Number(sourcesArg ?? 1);
const HASH_KEY = Buffer.from('"hash":"');
const arrivals: Record<string, number[]> = {};
const announced: Record<string, number> = {};
const clients: WebSocket[] = [];
const now = () => performance.timeOrigin + performance.now();

const direct = new WebSocket(nodeWsUrl!);
clients.push(direct);
await new Promise((resolve, reject) => direct.once("open", resolve).once("error", reject));
direct.send(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_subscribe", params: ["newHeads"] }));
direct.on("message", (data: Buffer) => {
  const at = now();
  const hash = (JSON.parse(String(data)) as { params?: { result?: { hash?: string } } }).params?.result?.hash;
  if (hash) announced[hash] = at;
});

/**
 * A server that answers the upgrade with anything but 101 serves no WebSocket here (an eRPC build without WebSocket
 * support answers 200): said on a line of its own, for the benchmark's row, instead of an uncaught error.
 */
function refused(ws: WebSocket): Promise<never> {
  return new Promise((_, reject) =>
    ws.once("unexpected-response", (_request, response) => {
      response.resume();
      reject(new NoWebSocket(`no WebSocket (the upgrade was answered ${response.statusCode})`));
    }),
  );
}

class NoWebSocket extends Error {}

let refusal: string | undefined;
try {
  await subscribeAll();
} catch (error) {
  if (!(error instanceof NoWebSocket)) throw error;
  refusal = error.message;
}
if (refusal !== undefined) {
  for (const ws of clients) ws.terminate();
  process.stdout.write(`${refusal}\n`, () => process.exit(0));
} else {
  process.stdout.write("ready\n");
  process.stdin.on("data", (data) => {
    if (!String(data).includes("done")) return;
    for (const ws of clients) ws.terminate();
    process.stdout.write(`${JSON.stringify({ announced, arrivals })}\n`, () => process.exit(0));
  });
}

async function subscribeAll() {
  for (let i = 0; i < count; i += 250) {
    await Promise.all(
      Array.from({ length: Math.min(250, count - i) }, async (_, j) => {
        const ws = new WebSocket(wsUrl!, { localAddress: `127.0.0.${first + ((i + j) % sources)}` });
        clients.push(ws);
        await Promise.race([
          new Promise((resolve, reject) => ws.once("open", resolve).once("error", reject)),
          refused(ws),
        ]);
        const subscribed = new Promise((resolve) => ws.once("message", resolve));
        ws.send(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_subscribe", params: ["newHeads"] }));
        await subscribed;
        // The hash is read straight from the frame: a full parse per notification would measure this process, not
        // the gateway.
        ws.on("message", (data: Buffer) => {
          const at = now();
          const start = data.indexOf(HASH_KEY);
          if (start < 0) return;
          const hash = data.toString("latin1", start + HASH_KEY.length, start + HASH_KEY.length + 66);
          const times = (arrivals[hash] ??= []);
          times.push(at);
          // Tells the benchmark when every subscriber has the block, so it waits no longer (nor less) than that.
          if (times.length === count) process.stdout.write(`all ${hash}\n`);
        });
      }),
    );
  }
}
