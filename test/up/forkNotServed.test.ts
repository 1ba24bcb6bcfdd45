import { PassThrough } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { HttpRpcClient } from "../../src/rpc/httpRpcClient.js";
import { startUp, type RunningUp } from "../../src/up/runUp.js";
import { writeUpConfig } from "../support/upConfig.js";
import { waitFor } from "../support/waitFor.js";

const cleanup: Array<() => unknown> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

describe("lightfleet up: a light node forks", () => {
  it("no forked block reaches a newHeads subscriber or `latest`, and the node leaves routing", async () => {
    const config = writeUpConfig({ replicas: 3, health: { restartAfter: "10m" } });
    const up: RunningUp = await startUp({
      config,
      stdout: new PassThrough() as unknown as NodeJS.WriteStream,
    });
    cleanup.push(() => up.stop());
    const { fleet, devnet } = up.context;
    const rpc = up.endpoints.find((e) => e.label === "alpha RPC")!.url;
    const wsUrl = up.endpoints.find((e) => e.label === "alpha WebSocket")!.url;
    await waitFor(() => fleet!.routedMembers("alpha").length === 3, {
      what: "three routed",
      timeoutMs: 30_000,
    });

    const ws = new WebSocket(wsUrl);
    cleanup.push(() => ws.close());
    await new Promise((resolve, reject) => ws.once("open", resolve).once("error", reject));
    const announced: Array<{ number: number; hash: string }> = [];
    ws.on("message", (data: Buffer) => {
      const message = JSON.parse(String(data)) as { params?: { result: { number: string; hash: string } } };
      if (message.params)
        announced.push({ number: Number(message.params.result.number), hash: message.params.result.hash });
    });
    ws.send(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_subscribe", params: ["newHeads"] }));
    const latest: Array<{ number: number; hash: string }> = [];
    let polling = true;
    const client = new HttpRpcClient(rpc, 5_000);
    const poller = (async () => {
      while (polling) {
        const block = await client.call<{ number: string; hash: string } | null>("eth_getBlockByNumber", [
          "latest",
          false,
        ]);
        if (block) latest.push({ number: Number(block.number), hash: block.hash });
      }
    })();
    cleanup.push(() => {
      polling = false;
      return poller;
    });
    await waitFor(() => announced.length > 0, { what: "the first announcement" });

    const forked = "alpha-light-1";
    await devnet!.fault(forked, { kind: "fork" });
    const forkedAt = devnet!.head("alpha").number;
    await waitFor(() => !fleet!.routedMembers("alpha").some((m) => m.name === forked), {
      what: `${forked} unrouted`,
      timeoutMs: 10_000,
    });
    // Ten more blocks with the forked node running beside the others.
    await waitFor(() => announced.some((b) => b.number >= forkedAt + 10), {
      what: "ten more blocks",
      timeoutMs: 20_000,
    });
    polling = false;
    await poller;

    const full = new HttpRpcClient(devnet!.nodes("alpha").find((n) => n.role === "full")!.httpUrl, 5_000);
    const forkedServed: string[] = [];
    for (const b of [...announced, ...latest]) {
      const canonical = await full.call<{ hash: string }>("eth_getBlockByNumber", [
        `0x${b.number.toString(16)}`,
        false,
      ]);
      if (canonical.hash !== b.hash) forkedServed.push(`${b.number} ${b.hash}`);
    }
    expect(latest.length).toBeGreaterThan(20);
    expect(forkedServed).toEqual([]);
    for (let i = 1; i < announced.length; i++)
      expect(announced[i]!.number).toBe(announced[i - 1]!.number + 1);
  });
});
