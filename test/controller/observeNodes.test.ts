import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { observeNodes, ProbeClients, type ObserveNodesOptions } from "../../src/controller/observeNodes.js";
import { OutstandingProbes } from "../../src/controller/outstandingProbes.js";
import type { FleetMember } from "../../src/fleet/fleet.js";
import { waitFor } from "../support/waitFor.js";

const BLOCK = {
  number: "0x5",
  hash: `0x${"ab".repeat(32)}`,
  timestamp: "0x6553f100",
  parentHash: `0x${"00".repeat(32)}`,
};

/** A JSON-RPC node that answers the probe's batch, each answer held back until `hold` (if set) resolves. */
interface FakeNode {
  url: string;
  requests: number;
  hold?: Promise<void>;
  server: Server;
}

const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

async function fakeNode(hold?: Promise<void>): Promise<FakeNode> {
  const node = { requests: 0, hold } as FakeNode;
  node.server = createServer((req: IncomingMessage, res: ServerResponse) => {
    node.requests++;
    let body = "";
    req.on("data", (chunk: Buffer) => (body += chunk));
    req.on("end", async () => {
      await node.hold;
      const calls = JSON.parse(body) as Array<{ id: number; method: string }>;
      const answer = (method: string) =>
        method === "eth_chainId" ? "0x7a69" : method === "eth_syncing" ? false : BLOCK;
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify(calls.map((c) => ({ jsonrpc: "2.0", id: c.id, result: answer(c.method) }))));
    });
  });
  servers.push(node.server);
  await new Promise<void>((resolve) => node.server.listen(0, "127.0.0.1", resolve));
  node.url = `http://127.0.0.1:${(node.server.address() as AddressInfo).port}`;
  return node;
}

const member = (name: string, url: string): FleetMember => ({
  name,
  network: "n",
  httpUrl: url,
  startedAt: 1,
  routed: true,
  restarting: false,
  restarts: [],
});

describe("observeNodes with a hung node", () => {
  it("does not wait for it: reports it unanswered, sends it no second probe, and hands over its late answer next", async () => {
    let release!: () => void;
    const good = await fakeNode();
    const hung = await fakeNode(new Promise<void>((resolve) => (release = resolve)));
    const options: ObserveNodesOptions = {
      network: "n",
      members: [member("good", good.url), member("hung", hung.url)],
      checkHeight: undefined,
      timeoutMs: 10_000,
      waitMs: 1_000,
      probes: new OutstandingProbes(Date.now),
      restarting: new Set(),
      clients: new ProbeClients(10_000),
    };
    const firstProbed = Date.now();
    const first = await observeNodes(options);
    // The round waited at most its 1 s for the hung node, not the 10 s probe timeout.
    expect(Date.now() - firstProbed).toBeLessThan(5_000);
    expect(first[0]).toMatchObject({ name: "good", reachable: true, head: { number: 5 } });
    expect(first[1]).toMatchObject({ name: "hung", reachable: false });
    expect(first[1]!.unansweredSince).toBeGreaterThanOrEqual(firstProbed);

    // The next round does not wait for it at all (it left its last probe unanswered), nor probes it again.
    const secondStarted = Date.now();
    const [second] = await observeNodes({ ...options, members: [member("hung", hung.url)] });
    expect(Date.now() - secondStarted).toBeLessThan(500);
    expect(second!.unansweredSince).toBe(first[1]!.unansweredSince);
    expect(hung.requests).toBe(1);

    release();
    await waitFor(() => options.probes.nextSilenceDeadline(["hung"], 0) === undefined, {
      what: "the hung node's probe answered",
      timeoutMs: 5_000,
    });
    const third = await observeNodes(options);
    expect(third[1]).toMatchObject({ name: "hung", reachable: true, head: { number: 5 } });
    expect(third[1]!.unansweredSince).toBeUndefined();
  });
});
