import { EventEmitter } from "node:events";
import { createServer } from "node:http";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { NetworkUpstreams } from "../../../src/gateway/upstreams/networkUpstreams.js";
import type { FeedBlock } from "../../../src/gateway/ws/headFeed.js";
import { HeadFeed } from "../../../src/gateway/ws/headFeed.js";
import { silentLogger } from "../../../src/log/logger.js";
import { waitFor } from "../../support/waitFor.js";

const hash = (n: number, fork = "a") => `0x${fork.repeat(2)}${n.toString(16).padStart(62, "0")}`;
const block = (n: number, fork = "a", parentFork = fork) => ({
  number: `0x${n.toString(16)}`,
  hash: hash(n, fork),
  parentHash: hash(n - 1, parentFork),
  timestamp: `0x${(1_000 + n).toString(16)}`,
  transactions: [],
  size: "0x200",
});

describe("head feed", () => {
  let server: Server;
  let url: string;
  /** Blocks the fake node has, by number, and the calls it answered. */
  const chain = new Map<number, ReturnType<typeof block>>();
  let calls = 0;

  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = "";
      req.on("data", (chunk: Buffer) => (body += String(chunk)));
      req.on("end", () => {
        const batch = JSON.parse(body) as Array<{ id: number; params: [string] }>;
        calls += batch.length;
        const answers = batch.map((c) => ({
          jsonrpc: "2.0",
          id: c.id,
          result: chain.get(Number(c.params[0])) ?? null,
        }));
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(answers));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  });
  afterAll(() => new Promise((resolve) => server.close(resolve)));

  it("announces the child of the last block from the header the node sent, and fetches on a gap or a fork", async () => {
    const upstreams = Object.assign(new EventEmitter(), { url: () => url }) as unknown as NetworkUpstreams;
    const feed = new HeadFeed({ upstreams, timeoutMs: 1_000, logger: silentLogger() });
    const announced: FeedBlock[] = [];
    feed.on("block", (b: FeedBlock) => announced.push(b));
    const head = (b: ReturnType<typeof block>) =>
      upstreams.emit("head", "node", { number: Number(b.number), hash: b.hash, timestamp: 0 }, b);
    for (let n = 1; n <= 5; n++) chain.set(n, block(n));

    head(block(1));
    await waitFor(() => announced.length === 1, { what: "the first block" });
    const fetched = calls;
    expect(fetched).toBeGreaterThan(0);

    head(block(2));
    head(block(3));
    await waitFor(() => announced.length === 3, { what: "blocks 2 and 3" });
    expect(calls).toBe(fetched);
    expect(announced.map((b) => b.number)).toEqual([1, 2, 3]);
    // The notification is the header, without the block's body fields.
    expect(announced[2]!.header).toEqual({ ...block(3), transactions: undefined, size: undefined });
    expect(JSON.parse(announced[2]!.headerJson)).not.toHaveProperty("transactions");

    // A gap: block 4 is fetched from the node that announced 5.
    head(block(5));
    await waitFor(() => announced.length === 5, { what: "blocks 4 and 5" });
    expect(calls).toBeGreaterThan(fetched);
    expect(announced.map((b) => b.number)).toEqual([1, 2, 3, 4, 5]);

    // A sibling of 5 building 6: not the child of the last block, so the node is asked for the fork point.
    chain.set(5, block(5, "b", "a"));
    chain.set(6, block(6, "b"));
    const removed: FeedBlock[] = [];
    feed.on("removed", (b: FeedBlock) => removed.push(b));
    head(block(6, "b"));
    await waitFor(() => announced.length === 7, { what: "the new branch" });
    expect(removed.map((b) => b.hash)).toEqual([hash(5)]);
    expect(announced.slice(5).map((b) => b.hash)).toEqual([hash(5, "b"), hash(6, "b")]);
    feed.close();
  });
});
