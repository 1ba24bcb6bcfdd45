import { afterEach, describe, expect, it } from "vitest";
import { createPublicClient, webSocket } from "viem";
import type { Devnet } from "../../src/devnet/devnet.js";
import { HttpRpcClient } from "../../src/rpc/httpRpcClient.js";
import { startTestDevnet } from "../support/devnet.js";
import { waitFor } from "../support/waitFor.js";
import { CHAIN_ID, NETWORK, rawWs, startTestGateway, waitForServedHead } from "./support.js";
import type { Json } from "./support.js";

const cleanup: Array<() => unknown> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

async function mine(devnet: Devnet, blocks: number): Promise<void> {
  for (let i = 0; i < blocks; i++) await devnet.mine(NETWORK);
}

describe("WebSocket subscriptions across node failures", () => {
  it("a block watcher receives every block in order, without a gap, while its nodes are killed, stalled and forked", async () => {
    const devnet = await startTestDevnet({
      networks: [{ name: NETWORK, chainId: CHAIN_ID, fullNodes: 1, lightNodes: 2 }],
    });
    await mine(devnet, 2);
    const { gateway, source, wsUrl } = await startTestGateway(devnet);
    cleanup.push(() => gateway.stop());
    await waitForServedHead(gateway, devnet);

    // The raw newHeads stream, as an oracle node reads it; and viem's watcher, which fetches each announced block.
    const ws = await rawWs(wsUrl);
    cleanup.push(() => ws.close());
    const { result: subscription } = await ws.call("eth_subscribe", ["newHeads"]);
    const seen: Array<{ number: number; hash: string }> = [];
    ws.socket.on("message", (data) => {
      const message = JSON.parse(String(data)) as Json;
      if (message.params?.subscription === subscription)
        seen.push({ number: Number(message.params.result.number), hash: message.params.result.hash });
    });
    const viemSeen = new Set<number>();
    const client = createPublicClient({ transport: webSocket(wsUrl) });
    const unwatch = client.watchBlocks({ onBlock: (block) => viemSeen.add(Number(block.number)) });
    cleanup.push(unwatch);
    const start = devnet.head(NETWORK).number;
    const reaches = (n: number) =>
      waitFor(() => seen.some((b) => b.number === n), { what: `block ${n} at the watcher` });
    await waitFor(
      async () => {
        await devnet.mine(NETWORK);
        return seen.length > 0 && viemSeen.size > 0;
      },
      { what: "the watchers' first block" },
    );
    const first = Math.max(seen[0]!.number, Math.min(...viemSeen));

    // Killed: the other node carries the stream.
    await devnet.fault(`${NETWORK}-light-0`, { kind: "kill" });
    await mine(devnet, 3);
    await reaches(devnet.head(NETWORK).number);
    await devnet.fault(`${NETWORK}-light-0`, { kind: "heal" });
    await waitFor(
      async () =>
        (await new HttpRpcClient(devnet.nodes(NETWORK)[1]!.httpUrl, 1000)
          .call("eth_chainId")
          .catch(() => null)) !== null,
    );

    // Stalled: its old head never moves the stream back; the healthy node's blocks keep coming.
    await devnet.fault(`${NETWORK}-light-1`, { kind: "stall" });
    await mine(devnet, 3);
    await reaches(devnet.head(NETWORK).number);
    await devnet.fault(`${NETWORK}-light-1`, { kind: "heal" });

    // Forked, then taken out of routing as the controller does with a Diverged node.
    await devnet.fault(`${NETWORK}-light-0`, { kind: "fork" });
    await mine(devnet, 1);
    source.setRouted(NETWORK, `${NETWORK}-light-0`, false);
    await mine(devnet, 3);
    const end = devnet.head(NETWORK).number;
    await reaches(end);

    // No gap: each announcement is at most one above the one before (a re-announced height after a reorg is lower).
    for (let i = 1; i < seen.length; i++)
      expect(seen[i]!.number, `announcement ${i}`).toBeLessThanOrEqual(seen[i - 1]!.number + 1);
    // Every height from the first to the last was announced, and the last word on each is the canonical block.
    const full = new HttpRpcClient(devnet.nodes(NETWORK).find((n) => n.role === "full")!.httpUrl, 2000);
    const lastWord = new Map(seen.map((b) => [b.number, b.hash]));
    await waitFor(() => viemSeen.has(end), { what: "viem's watcher at the end" });
    for (let n = Math.max(first, start + 1); n <= end; n++) {
      expect(viemSeen.has(n), `viem saw block ${n}`).toBe(true);
      const canonical = await full.call<{ hash: string }>("eth_getBlockByNumber", [
        `0x${n.toString(16)}`,
        false,
      ]);
      expect(lastWord.get(n), `block ${n}`).toBe(canonical.hash);
    }
  });

  it("closes client WebSockets with 1001 on shutdown and stops accepting", async () => {
    const devnet = await startTestDevnet({
      networks: [{ name: NETWORK, chainId: CHAIN_ID, fullNodes: 1, lightNodes: 1 }],
    });
    const { gateway, wsUrl } = await startTestGateway(devnet);
    const ws = await rawWs(wsUrl);
    await ws.call("eth_subscribe", ["newHeads"]);
    const closed = new Promise<number>((resolve) => ws.socket.once("close", (code) => resolve(code)));
    await gateway.stop();
    expect(await closed).toBe(1001);
    await expect(fetch(gateway.url, { method: "POST", body: "{}" })).rejects.toThrow();
  });
});
