/**
 * The HTTP ceiling of bench/gateway.ts: a bare node:http server that reads the POST body, parses it and answers a
 * constant: an eth_blockNumber result, or the JSON `result` given as its argument (the same bytes a cached answer
 * is, so a cache hit is compared with writing an answer of its size). No node:http server can answer faster on the
 * same machine, so the gateway's rates are compared with it. Prints "listening <url>".
 *
 * With `--workers=N` (N > 1) the same server runs as N node:cluster workers sharing the port (connections handed out
 * round robin by the primary, as the gateway's workers are): what the machine itself charges for splitting a load
 * over N processes, with no code of the gateway's in it.
 *
 *   node --import tsx bench/bareHttp.ts [result-json] [--workers=N]
 */
import cluster from "node:cluster";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";

const WORKERS_FLAG = "--workers=";
const workers = Number(process.argv.find((a) => a.startsWith(WORKERS_FLAG))?.slice(WORKERS_FLAG.length) ?? 1);
const result = process.argv.slice(2).find((a) => !a.startsWith(WORKERS_FLAG));
const ANSWER = Buffer.from(`{"jsonrpc":"2.0","id":1,"result":${result ?? '"0x5"'}}`);

if (workers > 1 && cluster.isPrimary) {
  // Each worker prints its own "listening" line: node:cluster gives every worker listening on port 0 the same port.
  for (let i = 0; i < workers; i++) cluster.fork();
} else {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      try {
        JSON.parse(Buffer.concat(chunks).toString());
      } catch {
        res.writeHead(400).end();
        return;
      }
      res.writeHead(200, { "content-type": "application/json", "content-length": ANSWER.length }).end(ANSWER);
    });
  });
  server.listen(0, "127.0.0.1", () => {
    console.log(`listening http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  });
}
