import type { Registry } from "prom-client";
import { afterEach, describe, expect, it } from "vitest";
import { DEV_ACCOUNT } from "../../src/devnet/devTransactions.js";
import { HttpRpcClient } from "../../src/rpc/httpRpcClient.js";
import { startTestDevnet } from "../support/devnet.js";
import { waitFor } from "../support/waitFor.js";
import { CHAIN_ID, NETWORK, post, startTestGateway, waitForServedHead } from "./support.js";
import type { Json } from "./support.js";

const LIGHT_0 = `${NETWORK}-light-0`;
const LIGHT_1 = `${NETWORK}-light-1`;

const cleanup: Array<() => unknown> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

/** Calls the gateway sent to one node so far. */
async function sentTo(registry: Registry, upstream: string): Promise<number> {
  const values =
    (await registry.getSingleMetric("lightfleet_gateway_upstream_requests_total")?.get())?.values ?? [];
  return values.filter((v) => v.labels.upstream === upstream).reduce((sum, v) => sum + v.value, 0);
}

/**
 * A call pinned to a block (a `latest` read resolves to the served head) goes only to a node that has that block: the
 * served head is agreed on by the peers and the node that has it, so a routed node below it is asked nothing about it.
 * The call waits for a node to get the block (a block time or two), and says so if none does.
 */
describe("calls pinned to a block the routed nodes do not have yet", () => {
  it("asks no node below the block, waits for one to get it, and answers from that one", async () => {
    const devnet = await startTestDevnet({
      networks: [{ name: NETWORK, chainId: CHAIN_ID, fullNodes: 1, lightNodes: 2 }],
    });
    await devnet.mine(NETWORK);
    // Blocks of 4 s: a call waits up to two of them, within the upstream timeout (5 s here), for a node to get its
    // block; time enough for the heal below however loaded the machine.
    const { gateway, source, registry } = await startTestGateway(devnet, {}, {}, undefined, {
      blockTime: "4s",
    });
    cleanup.push(() => gateway.stop());
    await waitForServedHead(gateway, devnet);

    // light-1 misses the next block; light-0 and the peer have it, so it is served; then light-0 leaves routing.
    await devnet.fault(LIGHT_1, { kind: "stall" });
    await devnet.mine(NETWORK);
    const block = devnet.head(NETWORK).number;
    await waitFor(() => (gateway.servedHead(NETWORK) ?? 0) >= block, { what: `served head ${block}` });
    // The source tells the gateway at once (a synchronous change).
    source.setRouted(NETWORK, LIGHT_0, false);
    expect(gateway.servedHead(NETWORK)).toBe(block);

    const read = {
      jsonrpc: "2.0",
      id: 1,
      method: "eth_getTransactionCount",
      params: [DEV_ACCOUNT, "latest"],
    };
    // No node has the block: light-1 is not asked about it, and the gateway says which block is missing.
    const before = await sentTo(registry, LIGHT_1);
    const refused = (await post(gateway.url, read)).body as Json;
    expect(refused.error).toMatchObject({ code: -32000, message: expect.stringMatching(/header not found/) });
    expect(refused.error.message).toContain(`block ${block}`);
    expect(await sentTo(registry, LIGHT_1)).toBe(before);

    // The block reaches light-1 while a call waits for it: the call is answered, as the peer answers at that block.
    const waiting = post(gateway.url, read);
    await devnet.fault(LIGHT_1, { kind: "heal" });
    const answered = (await waiting).body as Json;
    const full = devnet.nodes(NETWORK).find((n) => n.role === "full")!;
    const expected = await new HttpRpcClient(full.httpUrl, 5_000).call<string>("eth_getTransactionCount", [
      DEV_ACCOUNT,
      `0x${block.toString(16)}`,
    ]);
    expect(answered).toEqual({ jsonrpc: "2.0", id: 1, result: expected });
  });
});
