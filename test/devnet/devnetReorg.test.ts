import { afterAll, describe, expect, it } from "vitest";
import type { Devnet } from "../../src/devnet/devnet.js";
import { HttpRpcClient } from "../../src/rpc/httpRpcClient.js";
import { expectNoAnvilLeft, startGenesisAnvil, startTestDevnet } from "../support/devnet.js";
import { gethOrSkip } from "../support/geth/gethBinary.js";
import { waitFor } from "../support/waitFor.js";

// Every test stopped what it started: no anvil of this file may outlive it.
afterAll(() => expectNoAnvilLeft());

const rpc = (url: string) => new HttpRpcClient(url, 3_000);

async function chain(url: string): Promise<string[]> {
  const client = rpc(url);
  const top = Number(await client.call<string>("eth_blockNumber"));
  const hashes: string[] = [];
  for (let n = 0; n <= top; n++) {
    hashes.push(
      (await client.call<{ hash: string }>("eth_getBlockByNumber", [`0x${n.toString(16)}`, false])).hash,
    );
  }
  return hashes;
}

async function mineTimes(devnet: Devnet, count: number): Promise<void> {
  for (let i = 0; i < count; i++) await devnet.mine();
}

describe("devnet reorg", () => {
  it("replaces the newest blocks on every node by a new branch at the same heights", async () => {
    const devnet = await startTestDevnet({
      networks: [{ name: "devnet", chainId: 31_337, fullNodes: 2, lightNodes: 2 }],
    });
    const emitter = await devnet.deployLogEmitter("devnet");
    await devnet.mine();
    await mineTimes(devnet, 2);
    const sent = await devnet.sendTransaction("devnet", { to: emitter.contractAddress, data: "0xbeef" });
    await mineTimes(devnet, 3);
    const urls = devnet.nodes().map((n) => n.httpUrl);
    const before = await chain(urls[0]!);
    expect(before).toHaveLength(7);
    await devnet.fault("devnet-light-1", { kind: "stall" });

    const head = await devnet.reorg("devnet", 3);
    expect(head.number).toBe(6);
    const after = await chain(urls[0]!);
    expect(after.slice(0, 4)).toEqual(before.slice(0, 4));
    for (const n of [4, 5, 6]) expect(after[n]).not.toBe(before[n]);
    expect(head.hash).toBe(after[6]);
    for (const url of urls.slice(1, 3)) expect(await chain(url)).toEqual(after);
    // The stalled node lost its old branch too and waits at the fork point.
    expect(await chain(urls[3]!)).toEqual(after.slice(0, 4));

    // The transaction of the replaced block 4 is in the new block 4, with its log, on every node.
    for (const url of urls.slice(0, 3)) {
      const receipt = await rpc(url).call<{ blockNumber: string; blockHash: string; logs: unknown[] }>(
        "eth_getTransactionReceipt",
        [sent.hash],
      );
      expect(receipt).toMatchObject({ blockNumber: "0x4", blockHash: after[4] });
      expect(receipt.logs).toHaveLength(1);
    }

    await devnet.fault("devnet-light-1", { kind: "heal" });
    await devnet.mine();
    const extended = await chain(urls[0]!);
    for (const url of urls.slice(1)) expect(await chain(url)).toEqual(extended);
    expect(extended.slice(0, 7)).toEqual(after);
  });

  it("replays the new branch to nodes that were away: killed, or attached later", async () => {
    const devnet = await startTestDevnet({ networks: [{ name: "devnet", chainId: 31_337, lightNodes: 1 }] });
    await mineTimes(devnet, 5);
    await devnet.fault("devnet-light-0", { kind: "kill" });
    await devnet.reorg("devnet", 2);
    await devnet.fault("devnet-light-0", { kind: "heal" });
    const full = await chain(devnet.nodes()[0]!.httpUrl);
    expect(await chain(devnet.nodes()[1]!.httpUrl)).toEqual(full);
    const late = await startGenesisAnvil(devnet, "late");
    await devnet.attach({ name: "late", network: "devnet", httpUrl: late.httpUrl });
    expect(await chain(late.httpUrl)).toEqual(full);
  });

  it("refuses depths beyond the chain or the limit", async () => {
    const devnet = await startTestDevnet();
    await mineTimes(devnet, 2);
    await expect(devnet.reorg("devnet", 3)).rejects.toThrow(/from 1 to 2 \(the head is 2; got 3\)/);
    await expect(devnet.reorg("devnet", 0)).rejects.toThrow(/whole number/);
    await expect(devnet.reorg("devnet", 1.5)).rejects.toThrow(/whole number/);
    await expect(devnet.reorg("nope", 1)).rejects.toThrow(/no devnet network named nope/);
    expect(devnet.head("devnet").number).toBe(2);
  });
});

describe("devnet reorg on geth", () => {
  it("replaces the newest blocks on every node by a new branch at the same heights, as on anvil", async (context) => {
    const gethPath = await gethOrSkip(() => context.skip());
    const devnet = await startTestDevnet({
      implementation: "geth",
      gethBinary: gethPath,
      networks: [{ name: "devnet", chainId: 31_337, fullNodes: 2, lightNodes: 2 }],
    });
    // geth's devnet starts with block 1 built: 1 + 6 blocks, as on anvil.
    const emitter = await devnet.deployLogEmitter("devnet");
    await mineTimes(devnet, 2);
    const sent = await devnet.sendTransaction("devnet", { to: emitter.contractAddress, data: "0xbeef" });
    await mineTimes(devnet, 4);
    const nodes = devnet.nodes();
    const urls = nodes.map((n) => n.httpUrl);
    const before = await chain(urls[0]!);
    expect(before).toHaveLength(8);
    const sentIn = Number(
      (await rpc(urls[0]!).call<{ blockNumber: string }>("eth_getTransactionReceipt", [sent.hash]))
        .blockNumber,
    );
    expect(sentIn).toBe(4);
    await devnet.fault("devnet-light-1", { kind: "stall" });
    await devnet.fault("devnet-light-0", { kind: "kill" });

    await expect(devnet.reorg("devnet", 8)).rejects.toThrow(/from 1 to 7 \(the head is 7; got 8\)/);
    await expect(devnet.reorg("devnet", 0)).rejects.toThrow(/whole number/);
    const head = await devnet.reorg("devnet", 4);
    expect(head.number).toBe(7);
    expect(devnet.head("devnet")).toEqual(head);
    const after = await chain(urls[0]!);
    expect(after.slice(0, 4)).toEqual(before.slice(0, 4));
    for (const n of [4, 5, 6, 7]) expect(after[n]).not.toBe(before[n]);
    expect(head.hash).toBe(after[7]);
    expect(await chain(urls[1]!)).toEqual(after);
    // The stalled node lost its old branch too and waits at the fork point.
    expect(await chain(urls[3]!)).toEqual(after.slice(0, 4));

    // The transaction of the replaced block 4 is in the new block 4, with its log, on every node at the head.
    for (const url of urls.slice(0, 2)) {
      const receipt = await rpc(url).call<{ blockNumber: string; blockHash: string; logs: unknown[] }>(
        "eth_getTransactionReceipt",
        [sent.hash],
      );
      expect(receipt).toMatchObject({ blockNumber: "0x4", blockHash: after[4] });
      expect(receipt.logs).toHaveLength(1);
    }

    // Nodes that were away are handed the new branch: the killed one when healed, the stalled one when healed.
    await devnet.fault("devnet-light-0", { kind: "heal" });
    await devnet.fault("devnet-light-1", { kind: "heal" });
    await devnet.mine();
    const extended = await chain(urls[0]!);
    expect(extended.slice(0, 8)).toEqual(after);
    // Both were more than 2 blocks behind: they sync from their peers over devp2p, waited for.
    for (const url of urls.slice(2)) {
      await waitFor(async () => (await chain(url)).at(-1) === extended.at(-1), {
        timeoutMs: 60_000,
        what: `${url} at the head`,
      });
    }
    for (const url of urls.slice(1)) expect(await chain(url)).toEqual(extended);
  }, 180_000);
});
