import { afterEach, describe, expect, it } from "vitest";
import type { Devnet } from "../../src/devnet/devnet.js";
import { HttpRpcClient } from "../../src/rpc/httpRpcClient.js";
import { startTestDevnet } from "../support/devnet.js";
import { waitFor } from "../support/waitFor.js";
import { CHAIN_ID, NETWORK, post, rawWs, startTestGateway, waitForServedHead } from "./support.js";
import type { Json } from "./support.js";

const cleanup: Array<() => unknown> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

async function mine(devnet: Devnet, blocks: number): Promise<void> {
  for (let i = 0; i < blocks; i++) await devnet.mine(NETWORK);
}

describe("forked blocks never reach clients", () => {
  it("one of three routed nodes forks: newHeads, the served head and `latest` only ever carry blocks the others agree on", async () => {
    const devnet = await startTestDevnet({
      networks: [{ name: NETWORK, chainId: CHAIN_ID, fullNodes: 1, lightNodes: 3 }],
    });
    await mine(devnet, 2);
    // Nobody unroutes the forked node here (no controller): the gateway alone must keep its blocks out.
    const { gateway, wsUrl } = await startTestGateway(devnet);
    cleanup.push(() => gateway.stop());
    await waitForServedHead(gateway, devnet);
    const ws = await rawWs(wsUrl);
    cleanup.push(() => ws.close());
    const { result: subscription } = await ws.call("eth_subscribe", ["newHeads"]);
    const announced: Array<{ number: number; hash: string }> = [];
    ws.socket.on("message", (data) => {
      const message = JSON.parse(String(data)) as Json;
      if (message.params?.subscription === subscription)
        announced.push({ number: Number(message.params.result.number), hash: message.params.result.hash });
    });
    const served: Array<{ number: number; hash: string }> = [];
    const heads: number[] = [];
    let polling = true;
    const poller = (async () => {
      while (polling) {
        const { body } = await post(gateway.url, {
          jsonrpc: "2.0",
          id: 1,
          method: "eth_getBlockByNumber",
          params: ["latest", false],
        });
        if (body?.result) served.push({ number: Number(body.result.number), hash: body.result.hash });
        heads.push(gateway.servedHead(NETWORK)!);
        await new Promise((resolve) => setImmediate(resolve));
      }
    })();
    cleanup.push(() => {
      polling = false;
      return poller;
    });

    await devnet.fault(`${NETWORK}-light-0`, { kind: "fork" });
    const start = devnet.head(NETWORK).number;
    for (let i = 0; i < 6; i++) {
      await mine(devnet, 1);
      const target = devnet.head(NETWORK).number;
      await waitFor(() => announced.some((b) => b.number === target), { what: `block ${target} announced` });
      await waitFor(() => served.some((b) => b.number === target), { what: `block ${target} as latest` });
    }
    polling = false;
    await poller;

    const full = new HttpRpcClient(devnet.nodes(NETWORK).find((n) => n.role === "full")!.httpUrl, 2000);
    const canonical = async (n: number) =>
      (await full.call<{ hash: string }>("eth_getBlockByNumber", [`0x${n.toString(16)}`, false])).hash;
    const forked: string[] = [];
    for (const b of [...announced, ...served])
      if (b.hash !== (await canonical(b.number))) forked.push(`${b.number} ${b.hash}`);
    expect(forked).toEqual([]);
    // Announced once each, in order: no reorg was ever announced, since none happened.
    for (let i = 1; i < announced.length; i++)
      expect(announced[i]!.number).toBe(announced[i - 1]!.number + 1);
    for (let i = 1; i < heads.length; i++) expect(heads[i]).toBeGreaterThanOrEqual(heads[i - 1]!);
    expect(announced.at(-1)!.number).toBeGreaterThan(start);
  });
});
