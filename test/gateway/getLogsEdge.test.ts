import { JsonRpcProvider, Network } from "ethers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPublicClient, http } from "viem";
import type { Devnet } from "../../src/devnet/devnet.js";
import type { Gateway } from "../../src/gateway/gateway.js";
import { RecentServedHeads } from "../../src/gateway/rpc/recentServedHeads.js";
import { startTestDevnet } from "../support/devnet.js";
import { waitFor } from "../support/waitFor.js";
import { CHAIN_ID, NETWORK, post, startTestGateway, waitForServedHead } from "./support.js";

const hex = (n: number) => `0x${n.toString(16)}`;
const RANGE = 4;

describe("the lowest head served within a window", () => {
  it("is the head current at the window's start, or the first one recorded since", () => {
    const heads = new RecentServedHeads(1_000);
    expect(heads.lowest(0, 7)).toBe(7);
    heads.record(10, 0);
    heads.record(11, 400);
    heads.record(12, 900);
    expect(heads.lowest(900, 12)).toBe(10);
    expect(heads.lowest(1_000, 12)).toBe(10);
    expect(heads.lowest(1_401, 12)).toBe(11);
    expect(heads.lowest(5_000, 12)).toBe(12);
    // Bounded: entries older than the window's start are dropped as new ones come.
    for (let i = 0; i < 10_000; i++) heads.record(13 + i, 5_000 + i * 10);
    expect(heads.size).toBeLessThan(200);
  });
});

describe("eth_getLogs at the window's edge (limit 4 blocks, block time 1 s)", () => {
  let devnet: Devnet;
  let gateway: Gateway;

  beforeAll(async () => {
    devnet = await startTestDevnet({
      networks: [{ name: NETWORK, chainId: CHAIN_ID, fullNodes: 1, lightNodes: 1 }],
    });
    for (let i = 0; i < 8; i++) await devnet.mine(NETWORK);
    ({ gateway } = await startTestGateway(devnet, {}, { getLogsMaxRange: RANGE }));
    await waitForServedHead(gateway, devnet);
  });

  afterAll(async () => {
    await gateway?.stop();
  });

  it("serves head - limit .. latest to a client whose head was overtaken by a block in between (ethers, viem)", async () => {
    const provider = new JsonRpcProvider(gateway.url, Network.from(CHAIN_ID), { staticNetwork: true });
    const client = createPublicClient({ transport: http(gateway.url) });
    try {
      for (let round = 0; round < 2; round++) {
        const head = await provider.getBlockNumber();
        // A block arrives between the client's two calls.
        await devnet.mine(NETWORK);
        await waitForServedHead(gateway, devnet);
        const viaEthers = await provider.getLogs({ fromBlock: head - RANGE, toBlock: "latest" });
        expect(Array.isArray(viaEthers)).toBe(true);
        const viaViem = await client.getLogs({ fromBlock: BigInt(head - RANGE), toBlock: "latest" });
        expect(Array.isArray(viaViem)).toBe(true);
      }
    } finally {
      provider.destroy();
    }
  });

  it("refuses it once the client could have seen the newer head, naming the exact earliest block", async () => {
    const before = gateway.servedHead(NETWORK)!;
    await devnet.mine(NETWORK);
    const served = await waitForServedHead(gateway, devnet);
    expect(served).toBe(before + 1);
    const call = {
      jsonrpc: "2.0",
      id: 1,
      method: "eth_getLogs",
      params: [{ fromBlock: hex(before - RANGE), toBlock: "latest" }],
    };
    // Within the block time after the new head the older one still counts; after it, the window moves.
    const refused = await waitFor(
      async () => {
        const answer = await post(gateway.url, call);
        return answer.body.error ? answer.body : undefined;
      },
      { timeoutMs: 10_000, intervalMs: 100, what: "the window to move to the new head" },
    );
    expect(refused.error.code).toBe(-32005);
    expect(refused.error.data).toEqual({
      limit: RANGE,
      earliestBlock: hex(served - RANGE),
      head: hex(served),
    });
    expect(refused.error.message).toContain(String(served - RANGE));
  });
});
