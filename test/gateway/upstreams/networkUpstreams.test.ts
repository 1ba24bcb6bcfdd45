import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, expect, it, onTestFinished } from "vitest";
import { NetworkUpstreams } from "../../../src/gateway/upstreams/networkUpstreams.js";
import { StaticUpstreamSource } from "../../../src/gateway/upstreams/staticSource.js";
import { silentLogger } from "../../../src/log/logger.js";
import { waitFor } from "../../support/waitFor.js";
import { CHAIN_ID, hex, blockAt, silentNode } from "./silentNode.js";

/** The chain the fake nodes share: the test moves its head; safe is 2 below it, finalized 4 below. */
const chain = () => ({ head: 10 });

/**
 * A node over HTTP on `shared`'s chain that counts the `eth_getBlockByNumber` calls for safe and finalized it is
 * sent (single or in a batch).
 */
async function countingNode(shared: { head: number }) {
  let tagCalls = 0;
  const answer = (call: { id: number; method: string; params?: unknown[] }) => {
    const result = (() => {
      if (call.method === "eth_chainId") return hex(CHAIN_ID);
      if (call.method !== "eth_getBlockByNumber") return null;
      const tag = call.params?.[0];
      if (tag === "safe" || tag === "finalized") tagCalls++;
      if (tag === "latest") return blockAt(shared.head);
      if (tag === "safe") return blockAt(shared.head - 2);
      if (tag === "finalized") return blockAt(shared.head - 4);
      return typeof tag === "string" ? blockAt(Number.parseInt(tag, 16)) : null;
    })();
    return { jsonrpc: "2.0", id: call.id, result };
  };
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (chunk: Buffer) => (body += chunk.toString()));
    req.on("end", () => {
      const parsed = JSON.parse(body) as Parameters<typeof answer>[0] | Array<Parameters<typeof answer>[0]>;
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify(Array.isArray(parsed) ? parsed.map(answer) : answer(parsed)));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  onTestFinished(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    tagCalls: () => tagCalls,
  };
}

/** Two routed nodes on one chain behind a NetworkUpstreams (no reserved peers: the nodes say safe and finalized). */
async function twoNodes(tagsMinIntervalMs: number) {
  const shared = chain();
  const nodes = [await countingNode(shared), await countingNode(shared)];
  const upstreams = new NetworkUpstreams({
    network: "devnet",
    chainId: CHAIN_ID,
    source: new StaticUpstreamSource(
      nodes.map((node, i) => ({ name: `node-${i}`, network: "devnet", httpUrl: node.url, routed: true })),
    ),
    pollIntervalMs: 20,
    timeoutMs: 2_000,
    logger: silentLogger(),
    tagsMinIntervalMs,
  });
  onTestFinished(() => upstreams.close());
  /** Moves the chain one block and waits for the nodes to agree on it. */
  const nextHead = async () => {
    shared.head++;
    await waitFor(() => upstreams.servedHead() === shared.head, { what: `served head ${shared.head}` });
  };
  return { shared, nodes, upstreams, nextHead };
}

describe("what following safe and finalized costs the nodes", () => {
  it("asks each node for them once per interval, not at every head", async () => {
    const { nodes, upstreams, nextHead } = await twoNodes(60_000);
    await waitFor(() => upstreams.finalized(), { what: "the agreed finalized block" });
    for (let i = 0; i < 10; i++) await nextHead();
    // One round (safe and finalized) for 11 heads, of both nodes or of the one that had answered at the first agreed
    // head; reading them at every head cost 2 calls per node per head.
    const calls = nodes.map((node) => node.tagCalls());
    expect(Math.max(...calls)).toBe(2);
    expect(Math.min(...calls)).toBeLessThanOrEqual(2);
    // Read at head 10, the first: the next reading waits for the interval.
    expect(upstreams.finalized()?.number).toBe(6);
  });

  it("reads them again once the interval has passed, so the last head's are known", async () => {
    const { shared, upstreams, nextHead } = await twoNodes(100);
    for (let i = 0; i < 5; i++) await nextHead();
    await waitFor(
      () => upstreams.safe()?.number === shared.head - 2 && upstreams.finalized()?.number === shared.head - 4,
      { what: `safe ${shared.head - 2} and finalized ${shared.head - 4}` },
    );
  });
});

describe("a reserved peer that is also an upstream", () => {
  it("is followed once, over the upstream's WebSocket, not polled over HTTP as well", async () => {
    // The same node (same HTTP URL) as reserved peer without a ws URL and as upstream with one: one follower for
    // both roles reads its head over the WebSocket every period, where a follower per role polled it over HTTP too.
    const node = await silentNode();
    const upstreams = new NetworkUpstreams({
      network: "devnet",
      chainId: CHAIN_ID,
      source: new StaticUpstreamSource([
        { name: "node", network: "devnet", httpUrl: node.httpUrl, wsUrl: node.wsUrl, routed: true },
      ]),
      pollIntervalMs: 20,
      timeoutMs: 5_000,
      logger: silentLogger(),
      peers: [{ name: "peer", http: node.httpUrl }],
    });
    onTestFinished(() => upstreams.close());
    await waitFor(() => node.state.wsHeadReads >= 3 && upstreams.servedHead() === 5, {
      what: "head reads over the WebSocket and the served head",
    });
    const httpBefore = node.state.httpHeadReads;
    const wsBefore = node.state.wsHeadReads;
    await waitFor(() => node.state.wsHeadReads >= wsBefore + 5, {
      what: "more head reads over the WebSocket",
    });
    expect(node.state.httpHeadReads).toBe(httpBefore);
    expect(upstreams.servedHead()).toBe(5);
  });
});
