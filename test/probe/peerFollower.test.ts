import { createServer } from "node:http";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { WebSocketServer } from "ws";
import type { AnvilNode } from "../../src/devnet/anvil.js";
import { startAnvil } from "../../src/devnet/anvil.js";
import type { BlockRef } from "../../src/chain/blockRef.js";
import { silentLogger } from "../../src/log/logger.js";
import { PeerFollower } from "../../src/probe/peerFollower.js";
import { HttpRpcClient } from "../../src/rpc/httpRpcClient.js";
import { waitFor } from "../support/waitFor.js";

const cleanup: Array<() => unknown> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

async function peerNode(chainId = 31_337): Promise<{ node: AnvilNode; rpc: HttpRpcClient }> {
  const node = await startAnvil({ name: "peer", chainId, noMining: true });
  cleanup.push(() => node.stop());
  return { node, rpc: new HttpRpcClient(node.httpUrl, 5_000) };
}

function follow(
  node: AnvilNode,
  options: { ws: boolean; expectedChainId?: number; pollIntervalMs?: number },
) {
  const follower = new PeerFollower({
    network: "devnet",
    peer: { name: "full-0", http: node.httpUrl, ...(options.ws ? { ws: node.wsUrl } : {}) },
    expectedChainId: options.expectedChainId ?? 31_337,
    pollIntervalMs: options.pollIntervalMs ?? 100,
    timeoutMs: 2_000,
    logger: silentLogger(),
  });
  cleanup.push(() => follower.stop());
  follower.start();
  return follower;
}

async function hashAt(rpc: HttpRpcClient, height: number): Promise<string> {
  return (await rpc.call<{ hash: string }>("eth_getBlockByNumber", [`0x${height.toString(16)}`, false])).hash;
}

/**
 * Serves `server` (HTTP) with `sockets` (WebSocket) on one loopback port, as a node does, closed after the test;
 * resolves to its host:port.
 */
async function listenAsNode(server: Server, sockets: WebSocketServer): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  cleanup.push(async () => {
    for (const client of sockets.clients) client.terminate();
    sockets.close();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });
  return `127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** A follower of the node at host:port over HTTP and WebSocket. */
function followerOf(url: string, timing: { pollIntervalMs: number; timeoutMs: number }): PeerFollower {
  return new PeerFollower({
    network: "devnet",
    peer: { name: "full-0", http: `http://${url}`, ws: `ws://${url}` },
    expectedChainId: 31_337,
    ...timing,
    logger: silentLogger(),
  });
}

describe("PeerFollower", () => {
  it("follows newHeads over WebSocket and records every recent hash", async () => {
    const { node, rpc } = await peerNode();
    const follower = follow(node, { ws: true, pollIntervalMs: 60_000 });
    const heads: BlockRef[] = [];
    follower.on("head", (ref: BlockRef) => heads.push(ref));
    await waitFor(() => follower.observation().reachable, { what: "reachable peer" });
    // With a one-minute poll period, later heads can only come from the subscription.
    await waitFor(async () => (await rpc.call("evm_mine"), heads.some((h) => h.number >= 3)), {
      what: "heads",
    });
    const observation = follower.observation();
    expect(observation.chainId).toBe(31_337);
    const top = observation.head!.number;
    for (let h = Math.max(1, top - 2); h <= top; h++) {
      expect(observation.recentHashes!.get(h)).toBe(await hashAt(rpc, h));
    }
  });

  it("falls back to HTTP polling and back-fills heights it skipped", async () => {
    const { node, rpc } = await peerNode();
    const follower = follow(node, { ws: false, pollIntervalMs: 100 });
    await waitFor(() => follower.observation().head?.number === 0, { what: "genesis" });
    for (let i = 0; i < 10; i++) await rpc.call("evm_mine");
    await waitFor(() => follower.observation().head?.number === 10, { what: "polled head 10" });
    await waitFor(() => follower.observation().recentHashes!.has(5), { what: "back-filled heights" });
    for (const h of [3, 5, 8, 9, 10])
      expect(follower.observation().recentHashes!.get(h)).toBe(await hashAt(rpc, h));
  });

  it("reports a peer on the wrong chain with its actual chain id", async () => {
    const { node } = await peerNode(5);
    const follower = follow(node, { ws: false, expectedChainId: 1 });
    await waitFor(() => follower.observation().chainId !== undefined, { what: "chain id" });
    expect(follower.observation().chainId).toBe(5);
  });

  it("turns unreachable when the peer dies, and reachable when it returns", async () => {
    const { node } = await peerNode();
    const follower = follow(node, { ws: false, pollIntervalMs: 50 });
    await waitFor(() => follower.observation().reachable, { what: "reachable" });
    await node.stop();
    await waitFor(() => !follower.observation().reachable, { what: "unreachable" });
    const again = await startAnvil({ name: "peer", chainId: 31_337, noMining: true, port: node.port });
    cleanup.push(() => again.stop());
    await waitFor(() => follower.observation().reachable, { what: "reachable again" });
  });

  it("polls over its open WebSocket while newHeads is silent, not over HTTP", async () => {
    // A node whose newHeads never fires (no block comes): the follower must still read its head every poll period,
    // and with its WebSocket open, over it (a frame each way) rather than an HTTP request each time.
    const block = {
      number: "0x5",
      timestamp: "0x64",
      hash: `0x${"ab".repeat(32)}`,
      parentHash: `0x${"cd".repeat(32)}`,
    };
    let httpPolls = 0;
    let wsPolls = 0;
    const server = createServer((request, response) => {
      let body = "";
      request.on("data", (chunk: Buffer) => (body += String(chunk)));
      request.on("end", () => {
        httpPolls++;
        const calls = JSON.parse(body) as Array<{ id: number; method: string }>;
        const answers = calls.map(({ id, method }) => ({
          jsonrpc: "2.0",
          id,
          result: method === "eth_chainId" ? "0x7a69" : block,
        }));
        response.setHeader("content-type", "application/json");
        response.end(JSON.stringify(answers));
      });
    });
    const sockets = new WebSocketServer({ server });
    sockets.on("connection", (socket) =>
      socket.on("message", (data) => {
        const { id, method } = JSON.parse(String(data)) as { id: number; method: string };
        if (method === "eth_getBlockByNumber") wsPolls++;
        const result = method === "eth_chainId" ? "0x7a69" : method === "eth_subscribe" ? "0x1" : block;
        socket.send(JSON.stringify({ jsonrpc: "2.0", id, result }));
      }),
    );
    const follower = followerOf(await listenAsNode(server, sockets), {
      pollIntervalMs: 20,
      timeoutMs: 5_000,
    });
    cleanup.push(() => follower.stop());
    follower.start();
    await waitFor(() => wsPolls >= 3, { what: "head polls over the WebSocket" });
    const httpBefore = httpPolls;
    const wsBefore = wsPolls;
    await waitFor(() => wsPolls >= wsBefore + 5, { what: "more head polls over the WebSocket" });
    expect(httpPolls).toBe(httpBefore);
    expect(follower.observation()).toMatchObject({ reachable: true, chainId: 31_337, head: { number: 5 } });
  });

  it("polls only when its owner says so with no timer of its own", async () => {
    const { node, rpc } = await peerNode();
    let polls = 0;
    const follower = new PeerFollower({
      network: "devnet",
      peer: { name: "full-0", http: node.httpUrl },
      expectedChainId: 31_337,
      pollIntervalMs: 5,
      timeoutMs: 5_000,
      logger: silentLogger(),
      ownTimer: false,
    });
    cleanup.push(() => follower.stop());
    // Each HTTP poll is one batch (a call on the test's own client is not).
    const original = HttpRpcClient.prototype.batch;
    cleanup.push(() => (HttpRpcClient.prototype.batch = original));
    HttpRpcClient.prototype.batch = function (this: HttpRpcClient, ...args) {
      polls++;
      return original.apply(this, args);
    };
    follower.start();
    await waitFor(() => follower.observation().head !== undefined, { what: "the first poll" });
    for (let tick = 1; tick <= 3; tick++) {
      const before = follower.observation().headSeenAt;
      await rpc.call("evm_mine");
      follower.pollIfSilent();
      await waitFor(() => follower.observation().headSeenAt !== before, { what: `poll ${tick}` });
    }
    // With a 5 ms timer of its own it would have polled many more times during those waits.
    expect(polls).toBe(4);
  });

  it("is still pending, not unusable, while its chain id is known and its head not yet", async () => {
    // A peer that answers eth_chainId over WebSocket at once but holds every HTTP read: a loaded machine's first
    // contact, between the WebSocket check and the first head. A round then must not call the peers unusable.
    const held: Array<() => void> = [];
    const server = createServer((request, response) => {
      request.resume();
      held.push(() => response.destroy());
    });
    const sockets = new WebSocketServer({ server });
    sockets.on("connection", (socket) =>
      socket.on("message", (data) => {
        const { id, method } = JSON.parse(String(data)) as { id: number; method: string };
        if (method === "eth_chainId") socket.send(JSON.stringify({ jsonrpc: "2.0", id, result: "0x7a69" }));
      }),
    );
    const url = await listenAsNode(server, sockets);
    // Before the server closes (cleanup runs last first): the held reads are let go.
    cleanup.push(() => {
      for (const release of held) release();
    });
    const follower = followerOf(url, { pollIntervalMs: 60_000, timeoutMs: 60_000 });
    cleanup.push(() => follower.stop());
    follower.start();
    await waitFor(() => follower.observation().chainId === 31_337 && held.length > 0, { what: "chain id" });
    const observation = follower.observation();
    expect(observation.head).toBeUndefined();
    expect(observation.pending).toBe(true);
  });
});
