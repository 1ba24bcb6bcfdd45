import { afterEach, describe, expect, it } from "vitest";
import type { Devnet } from "../../src/devnet/devnet.js";
import { startDevnet } from "../../src/devnet/devnet.js";
import { DevnetInputError } from "../../src/devnet/errors.js";
import { HttpRpcClient } from "../../src/rpc/httpRpcClient.js";
import { gethForTests } from "../support/geth/gethBinary.js";
import { waitFor } from "../support/waitFor.js";

const rpc = (url: string) => new HttpRpcClient(url, 10_000);
const running: Devnet[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((d) => d.stop()));
});

async function gethDevnet(skip: () => void, fullNodes = 2, lightNodes = 1): Promise<Devnet | undefined> {
  const geth = await gethForTests();
  if (!geth.path) {
    console.warn(`skipped: ${geth.missing}`);
    skip();
    return undefined;
  }
  const devnet = await startDevnet({
    implementation: "geth",
    gethBinary: geth.path,
    blockTimeMs: 0,
    networks: [{ name: "devnet", chainId: 31_337, fullNodes, lightNodes }],
  });
  running.push(devnet);
  return devnet;
}

const urlOf = (devnet: Devnet, name: string) => devnet.nodes().find((n) => n.name === name)!.httpUrl;
const headOf = async (url: string) =>
  await rpc(url).call<{ number: string; hash: string }>("eth_getBlockByNumber", ["latest", false]);
const mineTimes = async (devnet: Devnet, count: number) => {
  for (let i = 0; i < count; i++) await devnet.mine();
};

describe("the devnet on geth", () => {
  it("keeps every geth node on the builder's chain, mines the devnet's transactions, and lag, stall, fork, kill and heal act on a node", async (context) => {
    const devnet = await gethDevnet(() => context.skip());
    if (!devnet) return;
    const light = urlOf(devnet, "devnet-light-0");
    await mineTimes(devnet, 2);
    const head = devnet.head("devnet");
    expect(head.number).toBe(3);
    for (const node of devnet.nodes())
      expect(await headOf(node.httpUrl)).toMatchObject({ number: "0x3", hash: head.hash });
    // Block 1 carries the devnet's first transaction, signed with the chain id.
    const first = await rpc(light).call<{ transactions: string[] }>("eth_getBlockByNumber", ["0x1", false]);
    expect(first.transactions).toHaveLength(1);

    // A transaction a client sends to the light node goes into the next block on every node.
    const sent = await devnet.sendTransaction("devnet", {
      to: "0x00000000000000000000000000000000000000aa",
      value: 5n,
    });
    await devnet.mine();
    const receipt = await rpc(urlOf(devnet, "devnet-full-1")).call<{ status: string } | null>(
      "eth_getTransactionReceipt",
      [sent.hash],
    );
    expect(receipt?.status).toBe("0x1");

    await devnet.fault("devnet-light-0", { kind: "lag", blocks: 2 });
    await mineTimes(devnet, 4);
    expect(Number((await headOf(light)).number)).toBe(devnet.head("devnet").number - 2);

    await devnet.fault("devnet-light-0", { kind: "stall" });
    const stalledAt = Number((await headOf(light)).number);
    await mineTimes(devnet, 2);
    expect(Number((await headOf(light)).number)).toBe(stalledAt);

    await devnet.fault("devnet-light-0", { kind: "fork" });
    await mineTimes(devnet, 2);
    const forked = await headOf(light);
    const canonical = await rpc(urlOf(devnet, "devnet-full-0")).call<{ hash: string }>(
      "eth_getBlockByNumber",
      [forked.number, false],
    );
    expect(forked.hash).not.toBe(canonical.hash);

    await devnet.fault("devnet-light-0", { kind: "heal" });
    expect(await headOf(light)).toMatchObject({ hash: devnet.head("devnet").hash });

    // Killed, the full node that builds leaves it to the other; healed, it is back on the chain.
    const pid = devnet.status().nodes.find((n) => n.name === "devnet-full-0")!.pid!;
    await devnet.fault("devnet-full-0", { kind: "kill" });
    expect(() => process.kill(pid, 0)).toThrow();
    await mineTimes(devnet, 2);
    expect(await headOf(urlOf(devnet, "devnet-full-1"))).toMatchObject({ hash: devnet.head("devnet").hash });
    await devnet.fault("devnet-full-0", { kind: "heal" });
    await waitFor(
      async () => (await headOf(urlOf(devnet, "devnet-full-0"))).hash === devnet.head("devnet").hash,
      {
        what: "the healed full node on the chain",
      },
    );
    expect(devnet.status().networks[0]!.halted).toBe(false);
  }, 120_000);

  it("refuses a reorg with a message saying why, and halts when every full node is stalled", async (context) => {
    const devnet = await gethDevnet(() => context.skip(), 1, 0);
    if (!devnet) return;
    await expect(devnet.reorg("devnet", 1)).rejects.toThrow(DevnetInputError);
    await expect(devnet.reorg("devnet", 1)).rejects.toThrow(/not available on the geth devnet/);
    await devnet.fault("devnet-full-0", { kind: "stall" });
    const before = devnet.head("devnet").number;
    await mineTimes(devnet, 2);
    expect(devnet.head("devnet").number).toBe(before);
    expect(devnet.status().networks[0]!.halted).toBe(true);
  }, 60_000);
});
