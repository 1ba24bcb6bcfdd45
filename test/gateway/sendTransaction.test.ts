import { JsonRpcProvider, Network, Wallet, parseEther } from "ethers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPublicClient, createWalletClient, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import type { Devnet } from "../../src/devnet/devnet.js";
import type { Gateway } from "../../src/gateway/gateway.js";
import { freePort } from "../../src/process/freePort.js";
import { HttpRpcClient } from "../../src/rpc/httpRpcClient.js";
import { startTestDevnet } from "../support/devnet.js";
import { waitFor } from "../support/waitFor.js";
import { CHAIN_ID, NETWORK, post, startTestGateway, waitForServedHead } from "./support.js";
import type { Json } from "./support.js";

/** anvil's default accounts 1 and 2 (account 0 signs the devnet's own transactions). */
const KEY_1 = "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d";
const KEY_2 = "0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a";
const KEY_3 = "0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6";
const RECIPIENT = "0x000000000000000000000000000000000000dEaD";

/**
 * A dapp developer's first transaction through the public endpoint of a devnet with a block time: it is sent to every
 * routed light node, mined by the full nodes, replayed on every light node, and confirmed to ethers and viem, with no
 * node forking, however often the wallet sends it again.
 */
describe("eth_sendRawTransaction through the gateway on a devnet mining every 500 ms", () => {
  let devnet: Devnet;
  let gateway: Gateway;

  beforeAll(async () => {
    devnet = await startTestDevnet({
      networks: [{ name: NETWORK, chainId: CHAIN_ID, fullNodes: 1, lightNodes: 2 }],
      blockTimeMs: 500,
    });
    ({ gateway } = await startTestGateway(devnet));
    await waitForServedHead(gateway, devnet);
  });

  afterAll(async () => {
    await gateway?.stop();
  });

  /** Every node of the devnet has the block at `height`, with one hash: nobody forked (or stayed forked). */
  async function sameBlockEverywhere(height: number): Promise<string> {
    let last: Array<string | undefined> = [];
    try {
      await waitFor(
        async () => {
          last = await Promise.all(
            devnet.nodes(NETWORK).map(async (node) => {
              const block = await new HttpRpcClient(node.httpUrl, 5_000).call<{ hash: string } | null>(
                "eth_getBlockByNumber",
                [`0x${height.toString(16)}`, false],
              );
              return block?.hash;
            }),
          );
          return last.every((h) => h !== undefined) && new Set(last).size === 1;
        },
        { timeoutMs: 20_000, what: `block ${height} on every node, with one hash` },
      );
    } catch (error) {
      throw new Error(`block ${height} on the nodes: ${JSON.stringify(last)}`, { cause: error });
    }
    return last[0]!;
  }

  it("confirms an ethers wallet's transfer, sent again as wallets do, on every node alike", async () => {
    const provider = new JsonRpcProvider(gateway.url, Network.from(CHAIN_ID), { staticNetwork: true });
    provider.pollingInterval = 200;
    try {
      const wallet = new Wallet(KEY_1, provider);
      const signed = await wallet.signTransaction(
        await wallet.populateTransaction({ to: RECIPIENT, value: parseEther("0.001") }),
      );
      const sent = await provider.broadcastTransaction(signed);
      // The same bytes again, at once and after mining: the same hash every time, never an error.
      const again = await post(gateway.url, {
        jsonrpc: "2.0",
        id: 2,
        method: "eth_sendRawTransaction",
        params: [signed],
      });
      expect(again.body).toEqual({ jsonrpc: "2.0", id: 2, result: sent.hash });
      const receipt = await sent.wait(1, 30_000);
      expect(receipt?.status).toBe(1);
      const replay = await post(gateway.url, {
        jsonrpc: "2.0",
        id: 3,
        method: "eth_sendRawTransaction",
        params: [signed],
      });
      expect(replay.body).toEqual({ jsonrpc: "2.0", id: 3, result: sent.hash });
      expect(await sameBlockEverywhere(receipt!.blockNumber)).toBe(receipt!.blockHash);
      // The chain goes on, on every node alike.
      const later = (await waitForServedHead(gateway, devnet)) + 2;
      await waitFor(() => (gateway.servedHead(NETWORK) ?? 0) >= later, {
        timeoutMs: 20_000,
        what: "two more blocks",
      });
      await sameBlockEverywhere(later);
    } finally {
      provider.destroy();
    }
  });

  it("confirms a viem wallet client's transfer", async () => {
    const account = privateKeyToAccount(KEY_2);
    const chain = {
      id: CHAIN_ID,
      name: "devnet",
      nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
      rpcUrls: { default: { http: [gateway.url] } },
    } as const;
    const wallet = createWalletClient({ account, chain, transport: http(gateway.url) });
    const client = createPublicClient({ chain, transport: http(gateway.url), pollingInterval: 200 });
    const hash = await wallet.sendTransaction({ to: RECIPIENT, value: 1_000n });
    const receipt = await client.waitForTransactionReceipt({ hash, timeout: 30_000 });
    expect(receipt.status).toBe("success");
    await sameBlockEverywhere(Number(receipt.blockNumber));
  });

  it("passes on a node's refusal of a transaction that cannot be mined", async () => {
    const broke = Wallet.createRandom();
    const signed = await broke.signTransaction({
      type: 2,
      chainId: CHAIN_ID,
      nonce: 0,
      to: RECIPIENT,
      value: 1n,
      gasLimit: 21_000,
      maxFeePerGas: 10_000_000_000n,
      maxPriorityFeePerGas: 1n,
    });
    const answer = (
      await post(gateway.url, { jsonrpc: "2.0", id: 9, method: "eth_sendRawTransaction", params: [signed] })
    ).body as Json;
    expect(answer.id).toBe(9);
    expect(answer.error.message).toMatch(/insufficient funds|balance/i);
    const bad = (
      await post(gateway.url, { jsonrpc: "2.0", id: 10, method: "eth_sendRawTransaction", params: ["0x12"] })
    ).body as Json;
    expect(bad.error.code).toBe(-32602);
  });

  it("reaches the reserved peers too with sendTransactionsToPeers, even with no light node to take it", async () => {
    const nowhere = `http://127.0.0.1:${await freePort()}`;
    const unreachable = (u: { httpUrl: string; wsUrl?: string }) => ({
      ...u,
      httpUrl: nowhere,
      wsUrl: nowhere.replace("http", "ws"),
    });
    const wallet = new Wallet(KEY_3);
    const signed = await wallet.signTransaction({
      type: 2,
      chainId: CHAIN_ID,
      nonce: 0,
      to: RECIPIENT,
      value: 1n,
      gasLimit: 21_000,
      maxFeePerGas: 10_000_000_000n,
      maxPriorityFeePerGas: 1n,
    });
    const send = (url: string) =>
      post(url, { jsonrpc: "2.0", id: 4, method: "eth_sendRawTransaction", params: [signed] });
    const lightOnly = await startTestGateway(devnet, {}, {}, (u) => ({ ...u, ...unreachable(u) }));
    const withPeers = await startTestGateway(devnet, {}, { sendTransactionsToPeers: true }, (u) => ({
      ...u,
      ...unreachable(u),
    }));
    try {
      expect(((await send(lightOnly.gateway.url)).body as Json).error.code).toBe(-32603);
      const accepted = (await send(withPeers.gateway.url)).body as Json;
      expect(accepted.result).toMatch(/^0x[0-9a-f]{64}$/);
      // Mined by the full node, replayed on the light nodes: the receipt as the light nodes (the public gateway) give it.
      const receipt = await waitFor(
        async () =>
          (
            (
              await post(gateway.url, {
                jsonrpc: "2.0",
                id: 6,
                method: "eth_getTransactionReceipt",
                params: [accepted.result],
              })
            ).body as Json
          ).result as { blockNumber: string } | null,
        { timeoutMs: 20_000, what: "the transaction mined and replayed" },
      );
      await sameBlockEverywhere(Number(receipt.blockNumber));
    } finally {
      await lightOnly.gateway.stop();
      await withPeers.gateway.stop();
    }
  });

  it("holds each sending account to transactionLimit, whatever address it comes from", async () => {
    const limited = await startTestGateway(devnet, {
      transactionLimit: { perSenderPerSecond: 0.01, burst: 1 },
    });
    try {
      await waitForServedHead(limited.gateway, devnet);
      const signedBy = (wallet: Wallet, nonce: number) =>
        wallet.signTransaction({
          type: 2,
          chainId: CHAIN_ID,
          nonce,
          to: RECIPIENT,
          value: 1n,
          gasLimit: 21_000,
          maxFeePerGas: 10_000_000_000n,
          maxPriorityFeePerGas: 1n,
        });
      const send = async (raw: string) =>
        (
          (
            await post(limited.gateway.url, {
              jsonrpc: "2.0",
              id: 5,
              method: "eth_sendRawTransaction",
              params: [raw],
            })
          ).body as Json
        ).error;
      const [a, b] = [0, 1].map(() => new Wallet(Wallet.createRandom().privateKey)) as [Wallet, Wallet];
      // Unfunded senders: the nodes refuse them, which shows the gateway let the first one through.
      expect((await send(await signedBy(a, 0))).message).toMatch(/insufficient funds|balance/i);
      const second = await send(await signedBy(a, 1));
      expect(second.code).toBe(-32005);
      expect(second.message).toContain(a.address.toLowerCase());
      expect(second.data.retryAfterMs).toBeGreaterThan(0);
      expect((await send(await signedBy(b, 0))).message).toMatch(/insufficient funds|balance/i);
    } finally {
      await limited.gateway.stop();
    }
  });
});
