import { afterAll, describe, expect, it } from "vitest";
import { startDevnet } from "../../src/devnet/devnet.js";
import { LOG_EMITTER_TOPIC } from "../../src/devnet/devTransactions.js";
import { HttpRpcClient } from "../../src/rpc/httpRpcClient.js";
import {
  anvilChildren,
  devnetPids,
  expectNoAnvilLeft,
  expectProcessesGone,
  startGenesisAnvil,
  startTestDevnet,
} from "../support/devnet.js";
import { processGroup } from "../support/processTree.js";
import { waitFor } from "../support/waitFor.js";

// Every test stopped what it started: no anvil of this file may outlive it.
afterAll(() => expectNoAnvilLeft());

function rpc(url: string): HttpRpcClient {
  return new HttpRpcClient(url, 5_000);
}

async function hashes(url: string, upTo: number): Promise<string[]> {
  const client = rpc(url);
  const out: string[] = [];
  for (let n = 0; n <= upTo; n++) {
    const block = await client.call<{ hash: string } | null>("eth_getBlockByNumber", [
      `0x${n.toString(16)}`,
      false,
    ]);
    out.push(block?.hash ?? "missing");
  }
  return out;
}

async function height(url: string): Promise<number> {
  return Number(await rpc(url).call<string>("eth_blockNumber"));
}

describe("devnet processes", () => {
  it("runs every anvil in a process group of its own, so a terminal's Ctrl-C reaches only the supervisor", async () => {
    const devnet = await startTestDevnet({
      networks: [{ name: "devnet", chainId: 31_337, fullNodes: 2, lightNodes: 1 }],
    });
    const pids = devnetPids(devnet);
    expect(pids).toHaveLength(3);
    const ours = processGroup(process.pid);
    for (const pid of pids) expect(processGroup(pid)).toBe(pid);
    expect(pids).not.toContain(ours);
  });
});

describe("devnet block driver", () => {
  it("mines every block on full and light nodes with identical hashes", async () => {
    const devnet = await startTestDevnet({
      networks: [{ name: "devnet", chainId: 31_337, fullNodes: 2, lightNodes: 2 }],
    });
    const nodes = devnet.nodes("devnet");
    expect(nodes.map((n) => `${n.name}:${n.role}`)).toEqual([
      "devnet-full-0:full",
      "devnet-full-1:full",
      "devnet-light-0:light",
      "devnet-light-1:light",
    ]);
    for (let i = 0; i < 6; i++) await devnet.mine();
    const reference = await hashes(nodes[0]!.httpUrl, 6);
    expect(new Set(reference).size).toBe(7);
    for (const node of nodes.slice(1)) expect(await hashes(node.httpUrl, 6)).toEqual(reference);
    expect(devnet.head("devnet")).toEqual({ number: 6, hash: reference[6] });
  });

  it("gives every node of a block the same timestamp, from the shared genesis on", async () => {
    const genesisTimestamp = Math.floor(Date.now() / 1000) - 3_600;
    const devnet = await startTestDevnet({
      genesisTimestamp,
      networks: [{ name: "devnet", chainId: 31_337, lightNodes: 1 }],
    });
    await devnet.mine();
    for (const node of devnet.nodes()) {
      const client = rpc(node.httpUrl);
      const genesis = await client.call<{ timestamp: string }>("eth_getBlockByNumber", ["0x0", false]);
      const first = await client.call<{ timestamp: string }>("eth_getBlockByNumber", ["0x1", false]);
      expect(Number(genesis.timestamp)).toBe(genesisTimestamp);
      expect(Math.abs(Number(first.timestamp) - Date.now() / 1000)).toBeLessThan(30);
    }
  });

  it("produces blocks on its own every blockTimeMs, on every network", async () => {
    const devnet = await startTestDevnet({
      blockTimeMs: 100,
      networks: [
        { name: "alpha", chainId: 1_001, lightNodes: 1 },
        { name: "beta", chainId: 1_002 },
      ],
    });
    await waitFor(() => devnet.head("alpha").number >= 4 && devnet.head("beta").number >= 4, {
      what: "blocks",
    });
    const [full, light] = devnet.nodes("alpha");
    const top = Math.min(await height(full!.httpUrl), await height(light!.httpUrl));
    expect(await hashes(light!.httpUrl, top)).toEqual(await hashes(full!.httpUrl, top));
    const beta = devnet.nodes("beta")[0]!.httpUrl;
    expect(Number(await rpc(beta).call<string>("eth_chainId"))).toBe(1_002);
    // Same genesis, but each network's own chain from block 1 on.
    const [alphaHashes, betaHashes] = [await hashes(full!.httpUrl, 1), await hashes(beta, 1)];
    expect(alphaHashes[0]).toBe(betaHashes[0]);
    expect(alphaHashes[1]).not.toBe(betaHashes[1]);
  });

  it("replays an attached node from genesis to the head, then mirrors every new block", async () => {
    const devnet = await startTestDevnet();
    for (let i = 0; i < 40; i++) await devnet.mine();
    const fresh = await startGenesisAnvil(devnet, "attached-0");
    expect(await height(fresh.httpUrl)).toBe(0);
    await devnet.attach({ name: "attached-0", network: "devnet", httpUrl: fresh.httpUrl });
    const full = devnet.nodes("devnet")[0]!;
    expect(await height(fresh.httpUrl)).toBe(40);
    expect(await hashes(fresh.httpUrl, 40)).toEqual(await hashes(full.httpUrl, 40));
    await devnet.mine();
    expect(await height(fresh.httpUrl)).toBe(41);
    expect(devnet.nodes().map((n) => n.name)).toContain("attached-0");
    devnet.detach("attached-0");
    await devnet.mine();
    expect(await height(fresh.httpUrl)).toBe(41);
    expect(devnet.nodes().map((n) => n.name)).not.toContain("attached-0");
  });

  it("replays a node restarted empty behind the driver's back", async () => {
    const devnet = await startTestDevnet();
    const first = await startGenesisAnvil(devnet, "restarting");
    await devnet.attach({ name: "restarting", network: "devnet", httpUrl: first.httpUrl });
    for (let i = 0; i < 5; i++) await devnet.mine();
    await first.stop();
    const second = await startGenesisAnvil(devnet, "restarting", { port: first.port });
    await waitFor(async () => (await height(second.httpUrl)) === 5, { what: "replay of the restarted node" });
    expect(await hashes(second.httpUrl, 5)).toEqual(await hashes(devnet.nodes()[0]!.httpUrl, 5));
  });

  it("mines transactions in the next block of every node, replays included, so logs agree", async () => {
    const devnet = await startTestDevnet({ networks: [{ name: "devnet", chainId: 31_337, lightNodes: 1 }] });
    const deployed = await devnet.deployLogEmitter("devnet");
    await devnet.mine();
    const emitted = await devnet.sendTransaction("devnet", {
      to: deployed.contractAddress,
      data: "0xc0ffee",
    });
    await devnet.mine();
    await devnet.mine();
    const late = await startGenesisAnvil(devnet, "late");
    await devnet.attach({ name: "late", network: "devnet", httpUrl: late.httpUrl });
    const results = [];
    for (const node of devnet.nodes()) {
      const client = rpc(node.httpUrl);
      const receipt = await client.call<{ blockNumber: string; status: string }>(
        "eth_getTransactionReceipt",
        [emitted.hash],
      );
      expect(receipt).toMatchObject({ blockNumber: "0x2", status: "0x1" });
      const logs = await client.call<
        Array<{ address: string; topics: string[]; data: string; blockHash: string }>
      >("eth_getLogs", [{ fromBlock: "0x0", toBlock: "latest" }]);
      results.push(logs);
    }
    expect(results[0]).toHaveLength(1);
    expect(results[0]![0]).toMatchObject({
      address: deployed.contractAddress.toLowerCase(),
      topics: [LOG_EMITTER_TOPIC],
      data: "0xc0ffee",
    });
    for (const logs of results) expect(logs).toEqual(results[0]);
  });

  it("refuses to attach a node from another genesis or chain, or under a taken name", async () => {
    const devnet = await startTestDevnet();
    const otherGenesis = await startGenesisAnvil(devnet, "other-genesis", {
      timestamp: devnet.genesisTimestamp - 100,
    });
    await expect(
      devnet.attach({ name: "x", network: "devnet", httpUrl: otherGenesis.httpUrl }),
    ).rejects.toThrow(/genesis/);
    const otherChain = await startGenesisAnvil(devnet, "other-chain", { chainId: 5 });
    await expect(
      devnet.attach({ name: "y", network: "devnet", httpUrl: otherChain.httpUrl }),
    ).rejects.toThrow(/chain id 5, expected 31337/);
    await expect(
      devnet.attach({ name: "devnet-full-0", network: "devnet", httpUrl: otherChain.httpUrl }),
    ).rejects.toThrow(/already exists/);
    await expect(devnet.attach({ name: "z", network: "nope", httpUrl: otherChain.httpUrl })).rejects.toThrow(
      /no devnet network named nope/,
    );
    expect(devnet.nodes().map((n) => n.name)).toEqual(["devnet-full-0"]);
  });

  it("stop kills every anvil it started", async () => {
    const devnet = await startDevnet({
      networks: [
        { name: "a", chainId: 10, fullNodes: 2, lightNodes: 1 },
        { name: "b", chainId: 11 },
      ],
      blockTimeMs: 50,
    });
    const pids = devnetPids(devnet);
    expect(pids).toHaveLength(4);
    expect(anvilChildren().sort()).toEqual([...pids].sort());
    await devnet.stop();
    await expectProcessesGone(pids);
    expect(anvilChildren()).toEqual([]);
  });

  it("rejects bad options with one clear message", async () => {
    await expect(
      startDevnet({ networks: [{ name: "A b", chainId: 0, fullNodes: 0 }], blockTimeMs: -1 }),
    ).rejects.toThrow(/network name "A b".*chainId must be a positive integer.*fullNodes.*blockTimeMs/);
    expect(anvilChildren()).toEqual([]);
  });
});
