/**
 * The subscriber side of bench/gateway.ts's fan-out run, in its own process so that parsing 5,000 notifications does
 * not compete with the gateway for the same event loop: opens N WebSockets to the gateway, subscribes each to
 * newHeads, prints "ready", records when each notification arrives (epoch ms), and on stdin "done" prints
 * {hash: [arrival, ...]} as JSON and exits.
 *
 *   node --import tsx bench/gatewayFanOutClients.ts <wsUrl> <count>
 */
import WebSocket from "ws";

const [wsUrl, countArg] = process.argv.slice(2);
const count = Number(countArg);
const HASH_KEY = Buffer.from('"hash":"');
const arrivals: Record<string, number[]> = {};
const clients: WebSocket[] = [];
const now = () => performance.timeOrigin + performance.now();

for (let i = 0; i < count; i += 250) {
  await Promise.all(
    Array.from({ length: Math.min(250, count - i) }, async () => {
      const ws = new WebSocket(wsUrl!);
      clients.push(ws);
      await new Promise((resolve, reject) => ws.once("open", resolve).once("error", reject));
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
        (arrivals[hash] ??= []).push(at);
      });
    }),
  );
}
process.stdout.write("ready\n");
process.stdin.on("data", (data) => {
  if (!String(data).includes("done")) return;
  for (const ws of clients) ws.terminate();
  process.stdout.write(`${JSON.stringify(arrivals)}\n`, () => process.exit(0));
});
