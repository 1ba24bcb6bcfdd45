/**
 * The HTTP ceiling of bench/gateway.ts: a bare node:http server that reads the POST body, parses it and answers a
 * constant: an eth_blockNumber result, or the JSON `result` given as its argument (the same bytes a cached answer
 * is, so a cache hit is compared with writing an answer of its size). No node:http server can answer faster on the
 * same machine, so the gateway's rates are compared with it. Prints "listening <url>".
 *
 *   node --import tsx bench/bareHttp.ts [result-json]
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";

const ANSWER = Buffer.from(`{"jsonrpc":"2.0","id":1,"result":${process.argv[2] ?? '"0x5"'}}`);

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
