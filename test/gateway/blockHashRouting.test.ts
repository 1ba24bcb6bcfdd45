import { JsonRpcProvider, Network } from "ethers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPublicClient, http } from "viem";
import type { Devnet } from "../../src/devnet/devnet.js";
import { DEV_ACCOUNT } from "../../src/devnet/devTransactions.js";
import type { Gateway } from "../../src/gateway/gateway.js";
import { startTestDevnet } from "../support/devnet.js";
import { waitFor } from "../support/waitFor.js";
import { CHAIN_ID, NETWORK, post, startTestGateway, waitForServedHead } from "./support.js";
import type { Json } from "./support.js";

const LAGGING = `${NETWORK}-light-1`;

/**
 * EIP-1898 block parameters route like the block they name: with one routed node two blocks behind, a read at the
 * head's hash (or at {blockNumber: "latest"}) must reach a node that has the block, every time.
 */
describe("EIP-1898 reads with a routed node two blocks behind", () => {
  let devnet: Devnet;
  let gateway: Gateway;

  beforeAll(async () => {
    devnet = await startTestDevnet({
      networks: [{ name: NETWORK, chainId: CHAIN_ID, fullNodes: 1, lightNodes: 2 }],
    });
    for (let i = 0; i < 3; i++) await devnet.mine(NETWORK);
    await devnet.fault(LAGGING, { kind: "lag", blocks: 2 });
    // The dev account pays gas in each of the last blocks, so its balance differs at every height.
    for (let i = 0; i < 2; i++) {
      await devnet.sendTransaction(NETWORK, { to: DEV_ACCOUNT });
      await devnet.mine(NETWORK);
    }
    ({ gateway } = await startTestGateway(devnet));
    await waitForServedHead(gateway, devnet);
    // Both nodes followed: the lagging one is routed and known to be behind.
    const behind = devnet.head(NETWORK).number - 2;
    await waitFor(async () => {
      const answer = await post(devnet.nodes(NETWORK).find((n) => n.name === LAGGING)!.httpUrl, {
        jsonrpc: "2.0",
        id: 1,
        method: "eth_blockNumber",
      });
      return Number(answer.body.result) === behind;
    });
  });

  afterAll(async () => {
    await gateway?.stop();
  });

  const balanceCalls = (param: unknown, count: number) =>
    Array.from({ length: count }, (_, id) => ({
      jsonrpc: "2.0",
      id,
      method: "eth_getBalance",
      params: [DEV_ACCOUNT, param],
    }));

  it("answers {blockHash} of the head from a node that has it, every call", async () => {
    const head = devnet.head(NETWORK);
    const atHead = (
      await post(gateway.url, balanceCalls(head.number === 0 ? "0x0" : `0x${head.number.toString(16)}`, 1))
    ).body[0].result as string;
    for (const param of [
      { blockHash: head.hash },
      { blockHash: head.hash, requireCanonical: true },
      head.hash,
    ]) {
      const answers = (await post(gateway.url, balanceCalls(param, 20))).body as Json[];
      expect(answers.filter((a) => a.error)).toEqual([]);
      expect(new Set(answers.map((a) => a.result))).toEqual(new Set([atHead]));
    }
    // viem and ethers, as a dapp asks.
    const client = createPublicClient({ transport: http(gateway.url) });
    for (let i = 0; i < 10; i++) {
      const viaViem = await client.request({
        method: "eth_getBalance",
        params: [DEV_ACCOUNT as `0x${string}`, { blockHash: head.hash as `0x${string}` }],
      });
      expect(viaViem).toBe(atHead);
    }
    const provider = new JsonRpcProvider(gateway.url, Network.from(CHAIN_ID), { staticNetwork: true });
    try {
      for (let i = 0; i < 10; i++)
        expect(await provider.getBalance(DEV_ACCOUNT, head.hash)).toBe(BigInt(atHead));
    } finally {
      provider.destroy();
    }
  });

  it("answers blocks and logs by the head's hash from a node that has it", async () => {
    const head = devnet.head(NETWORK);
    const calls = Array.from({ length: 10 }, (_, id) => [
      { jsonrpc: "2.0", id: `b${id}`, method: "eth_getBlockByHash", params: [head.hash, false] },
      { jsonrpc: "2.0", id: `l${id}`, method: "eth_getLogs", params: [{ blockHash: head.hash }] },
    ]).flat();
    const answers = (await post(gateway.url, calls)).body as Json[];
    expect(answers.filter((a) => a.error || a.result === null)).toEqual([]);
    expect(
      answers.filter((a) => String(a.id).startsWith("b")).every((a) => a.result.hash === head.hash),
    ).toBe(true);
  });

  it('pins {blockNumber: "latest"} to the served head like "latest"', async () => {
    const [latest, object] = (
      await post(gateway.url, [...balanceCalls("latest", 1), ...balanceCalls({ blockNumber: "latest" }, 1)])
    ).body as Json[];
    expect(object.result).toBe(latest.result);
    const answers = (await post(gateway.url, balanceCalls({ blockNumber: "latest" }, 20))).body as Json[];
    expect(new Set(answers.map((a) => a.result))).toEqual(new Set([latest.result]));
  });
});
