import { afterAll, describe, expect, it } from "vitest";
import type { Devnet } from "../../src/devnet/devnet.js";
import { NODE_RPC_TIMEOUT_MS } from "../../src/devnet/drivenNode.js";
import { DevnetInputError, DevnetNotFoundError } from "../../src/devnet/errors.js";
import { HttpRpcClient } from "../../src/rpc/httpRpcClient.js";
import {
  expectNoAnvilLeft,
  expectProcessesGone,
  processAlive,
  startGenesisAnvil,
  startTestDevnet,
} from "../support/devnet.js";
import { waitFor } from "../support/waitFor.js";

// Every test stopped what it started: no anvil of this file may outlive it.
afterAll(() => expectNoAnvilLeft());

const rpc = (url: string) => new HttpRpcClient(url, 3_000);

async function height(url: string): Promise<number> {
  return Number(await rpc(url).call<string>("eth_blockNumber"));
}

async function hashAt(url: string, n: number): Promise<string | undefined> {
  const block = await rpc(url).call<{ hash: string } | null>("eth_getBlockByNumber", [
    `0x${n.toString(16)}`,
    false,
  ]);
  return block?.hash;
}

async function mineTimes(devnet: Devnet, count: number): Promise<void> {
  for (let i = 0; i < count; i++) await devnet.mine();
}

function url(devnet: Devnet, name: string): string {
  return devnet.nodes().find((n) => n.name === name)!.httpUrl;
}

function nodeStatus(devnet: Devnet, name: string) {
  return devnet.status().nodes.find((n) => n.name === name)!;
}

async function devnetWithLight(fullNodes = 1): Promise<Devnet> {
  return startTestDevnet({ networks: [{ name: "devnet", chainId: 31_337, fullNodes, lightNodes: 1 }] });
}

describe("devnet faults", () => {
  it("lag keeps a node N blocks behind the head, and heal brings it back", async () => {
    const devnet = await devnetWithLight();
    await mineTimes(devnet, 2);
    await devnet.fault("devnet-light-0", { kind: "lag", blocks: 3 });
    await mineTimes(devnet, 6);
    expect(devnet.head("devnet").number).toBe(8);
    expect(await height(url(devnet, "devnet-light-0"))).toBe(5);
    expect(nodeStatus(devnet, "devnet-light-0")).toMatchObject({
      fault: { kind: "lag", blocks: 3 },
      target: 5,
    });
    await devnet.mine();
    expect(await height(url(devnet, "devnet-light-0"))).toBe(6);
    await devnet.fault("devnet-light-0", { kind: "heal" });
    expect(await height(url(devnet, "devnet-light-0"))).toBe(9);
    expect(nodeStatus(devnet, "devnet-light-0")).toMatchObject({ fault: null, target: 9 });
  });

  it("stall stops a node's blocks until heal", async () => {
    const devnet = await devnetWithLight();
    await mineTimes(devnet, 2);
    await devnet.fault("devnet-light-0", { kind: "stall" });
    await mineTimes(devnet, 4);
    expect(await height(url(devnet, "devnet-light-0"))).toBe(2);
    expect(nodeStatus(devnet, "devnet-light-0")).toMatchObject({ fault: { kind: "stall" }, target: null });
    await devnet.fault("devnet-light-0", { kind: "heal" });
    expect(await height(url(devnet, "devnet-light-0"))).toBe(6);
    expect(await hashAt(url(devnet, "devnet-light-0"), 6)).toBe(devnet.head("devnet").hash);
  });

  it("fork gives a node blocks of its own at every height from the next block, and heal returns it to the chain", async () => {
    const devnet = await devnetWithLight();
    await mineTimes(devnet, 3);
    await devnet.fault("devnet-light-0", { kind: "fork" });
    await mineTimes(devnet, 4);
    const light = url(devnet, "devnet-light-0");
    const full = url(devnet, "devnet-full-0");
    expect(await height(light)).toBe(7);
    expect(await hashAt(light, 3)).toBe(await hashAt(full, 3));
    for (const n of [4, 5, 6, 7]) expect(await hashAt(light, n)).not.toBe(await hashAt(full, n));
    // The network head is the common chain's, not the forked node's.
    expect(devnet.head("devnet").hash).toBe(await hashAt(full, 7));
    // Another fault on top, then fork again: heal still returns to the snapshot from before the first fork.
    await devnet.fault("devnet-light-0", { kind: "stall" });
    await devnet.mine();
    await devnet.fault("devnet-light-0", { kind: "fork" });
    await devnet.mine();
    expect(await hashAt(light, 9)).not.toBe(await hashAt(full, 9));
    await devnet.fault("devnet-light-0", { kind: "heal" });
    expect(await height(light)).toBe(9);
    for (const n of [4, 5, 6, 7, 8, 9]) expect(await hashAt(light, n)).toBe(await hashAt(full, n));
    await devnet.mine();
    expect(await hashAt(light, 10)).toBe(await hashAt(full, 10));
  });

  it("kill SIGKILLs a devnet-owned node; heal respawns it at the same address and replays it", async () => {
    const devnet = await devnetWithLight();
    await mineTimes(devnet, 3);
    const light = url(devnet, "devnet-light-0");
    const pid = nodeStatus(devnet, "devnet-light-0").pid!;
    await devnet.fault("devnet-light-0", { kind: "kill" });
    await expectProcessesGone([pid]);
    await expect(height(light)).rejects.toThrow(/cannot reach/);
    expect(nodeStatus(devnet, "devnet-light-0")).toMatchObject({ reachable: false, fault: { kind: "kill" } });
    expect(nodeStatus(devnet, "devnet-light-0").pid).toBeUndefined();
    await mineTimes(devnet, 2);
    await devnet.fault("devnet-light-0", { kind: "heal" });
    const respawned = nodeStatus(devnet, "devnet-light-0");
    expect(respawned.pid).not.toBe(pid);
    expect(processAlive(respawned.pid!)).toBe(true);
    expect(respawned).toMatchObject({ reachable: true, head: devnet.head("devnet") });
    expect(await height(light)).toBe(5);
    expect(await hashAt(light, 5)).toBe(await hashAt(url(devnet, "devnet-full-0"), 5));
  });

  it("a network whose only full node stalls or dies halts; heal resumes it", async () => {
    const devnet = await devnetWithLight();
    await mineTimes(devnet, 2);
    await devnet.fault("devnet-full-0", { kind: "stall" });
    await mineTimes(devnet, 3);
    expect(devnet.status().networks[0]).toMatchObject({ halted: true, head: { number: 2 } });
    expect(await height(url(devnet, "devnet-full-0"))).toBe(2);
    expect(await height(url(devnet, "devnet-light-0"))).toBe(2);
    await devnet.fault("devnet-full-0", { kind: "heal" });
    await devnet.mine();
    expect(devnet.status().networks[0]).toMatchObject({ halted: false, head: { number: 3 } });

    await devnet.fault("devnet-full-0", { kind: "kill" });
    await expect(height(url(devnet, "devnet-full-0"))).rejects.toThrow(/cannot reach/);
    await devnet.mine();
    expect(devnet.status().networks[0]!.halted).toBe(true);
    expect(await height(url(devnet, "devnet-light-0"))).toBe(3);
    await devnet.fault("devnet-full-0", { kind: "heal" });
    expect(await height(url(devnet, "devnet-full-0"))).toBe(3);
    await devnet.mine();
    expect(await hashAt(url(devnet, "devnet-full-0"), 4)).toBe(
      await hashAt(url(devnet, "devnet-light-0"), 4),
    );
  });

  it("with two full nodes, one killed leaves the network producing; healed, it is replayed", async () => {
    const devnet = await devnetWithLight(2);
    await devnet.fault("devnet-full-1", { kind: "kill" });
    await mineTimes(devnet, 3);
    expect(devnet.status().networks[0]).toMatchObject({ halted: false, head: { number: 3 } });
    await devnet.fault("devnet-full-1", { kind: "heal" });
    expect(await hashAt(url(devnet, "devnet-full-1"), 3)).toBe(devnet.head("devnet").hash);
  });

  it("a hung light node (stopped, its connections left open) does not hold up the blocks of the others", async () => {
    const devnet = await startTestDevnet({
      networks: [{ name: "devnet", chainId: 31_337, fullNodes: 1, lightNodes: 1 }],
      blockTimeMs: 200,
    });
    const full = url(devnet, "devnet-full-0");
    const pid = nodeStatus(devnet, "devnet-light-0").pid!;
    process.kill(pid, "SIGSTOP");
    try {
      const from = await height(full);
      // A producer waiting for the hung node's pool would stand for the driver's RPC timeout before each block; one
      // that does not wait (the guarantee: at most half a block) makes three blocks well within one such timeout,
      // however loaded the machine. Bounded by the product's timeout, not by this machine's speed.
      await waitFor(async () => (await height(full)) >= from + 3, {
        what: "three more blocks on the full node within one node RPC timeout",
        timeoutMs: NODE_RPC_TIMEOUT_MS,
      });
    } finally {
      process.kill(pid, "SIGCONT");
    }
  });

  it("kill of an attached node calls its kill function; without one it is refused", async () => {
    const devnet = await startTestDevnet();
    const node = await startGenesisAnvil(devnet, "ext");
    await devnet.attach({ name: "ext", network: "devnet", httpUrl: node.httpUrl });
    await expect(devnet.fault("ext", { kind: "kill" })).rejects.toThrow(DevnetInputError);
    devnet.detach("ext");
    let killed = 0;
    await devnet.attach({
      name: "ext",
      network: "devnet",
      httpUrl: node.httpUrl,
      kill: () => {
        killed += 1;
        node.process.kill("SIGKILL");
      },
    });
    await devnet.mine();
    await devnet.fault("ext", { kind: "kill" });
    expect(killed).toBe(1);
    await expectProcessesGone([node.process.pid!]);
    expect(nodeStatus(devnet, "ext")).toMatchObject({ fault: { kind: "kill" }, reachable: false });
    await devnet.mine();
    // The fleet restarts it on the same port: the devnet replays it and the fault is over.
    const restarted = await startGenesisAnvil(devnet, "ext", { port: node.port });
    await waitFor(async () => (await height(restarted.httpUrl)) === 2, { what: "replay after the restart" });
    expect(await hashAt(restarted.httpUrl, 2)).toBe(devnet.head("devnet").hash);
    await waitFor(() => nodeStatus(devnet, "ext").fault === null, { what: "the fault to clear" });
  });

  it("an attached node restarted by its fleet loses its stall or fork and is replayed", async () => {
    const devnet = await startTestDevnet();
    const first = await startGenesisAnvil(devnet, "ext");
    await devnet.attach({ name: "ext", network: "devnet", httpUrl: first.httpUrl });
    await devnet.mine();
    await devnet.fault("ext", { kind: "stall" });
    await mineTimes(devnet, 3);
    expect(await height(first.httpUrl)).toBe(1);
    await first.stop();
    const second = await startGenesisAnvil(devnet, "ext", { port: first.port });
    await waitFor(async () => (await height(second.httpUrl)) === 4, { what: "replay of the restarted node" });
    expect(nodeStatus(devnet, "ext").fault).toBeNull();

    await devnet.fault("ext", { kind: "fork" });
    await mineTimes(devnet, 2);
    expect(await hashAt(second.httpUrl, 6)).not.toBe(devnet.head("devnet").hash);
    await second.stop();
    const third = await startGenesisAnvil(devnet, "ext", { port: first.port });
    await waitFor(async () => (await hashAt(third.httpUrl, 6)) === devnet.head("devnet").hash, {
      what: "the restarted node back on the common chain",
    });
    expect(nodeStatus(devnet, "ext").fault).toBeNull();
  });

  it("names unknown nodes and bad faults clearly", async () => {
    const devnet = await startTestDevnet();
    await expect(devnet.fault("nope", { kind: "stall" })).rejects.toThrow(DevnetNotFoundError);
    await expect(devnet.fault("nope", { kind: "stall" })).rejects.toThrow(
      /no devnet node named nope \(nodes: devnet-full-0\)/,
    );
    await expect(devnet.fault("devnet-full-0", { kind: "lag", blocks: 0 })).rejects.toThrow(
      /lag needs blocks/,
    );
    expect(() => devnet.detach("devnet-full-0")).toThrow(/started by the devnet/);
    expect(() => devnet.head("nope")).toThrow(DevnetNotFoundError);
  });
});
