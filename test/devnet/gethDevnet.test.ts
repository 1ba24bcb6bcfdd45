import { Wallet } from "ethers";
import { spawn } from "node:child_process";
import { join } from "node:path";
import { afterEach, describe, expect, it, onTestFinished } from "vitest";
import type { DevnetStatus } from "../../src/devnet/devnet.js";
import type { Devnet } from "../../src/devnet/devnet.js";
import { startDevnet } from "../../src/devnet/devnet.js";
import { DEV_ACCOUNT } from "../../src/devnet/devTransactions.js";
import { DevnetInputError } from "../../src/devnet/errors.js";
import { SLOW_PROFILES, latencySampler, seededRandom } from "../../src/devnet/latencyProfile.js";
import { HttpRpcClient } from "../../src/rpc/httpRpcClient.js";
import { gethOrSkip } from "../support/geth/gethBinary.js";
import { expectProcessesGone } from "../support/devnet.js";
import { ROOT, runCli } from "../support/runCli.js";
import { waitFor, waitForProgress } from "../support/waitFor.js";

const rpc = (url: string) => new HttpRpcClient(url, 10_000);
const running: Devnet[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((d) => d.stop()));
});

async function gethDevnet(
  skip: () => void,
  fullNodes = 2,
  lightNodes = 1,
  latencyFronts = false,
): Promise<Devnet> {
  const gethPath = await gethOrSkip(skip);
  const devnet = await startDevnet({
    implementation: "geth",
    gethBinary: gethPath,
    blockTimeMs: 0,
    latencyFronts,
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
    const light = urlOf(devnet, "devnet-light-0");
    await mineTimes(devnet, 2);
    const head = devnet.head("devnet");
    expect(head.number).toBe(3);
    for (const node of devnet.nodes())
      expect(await headOf(node.httpUrl)).toMatchObject({ number: "0x3", hash: head.hash });
    // Block 1 carries the devnet's first transaction, signed with the chain id.
    const first = await rpc(light).call<{ transactions: string[] }>("eth_getBlockByNumber", ["0x1", false]);
    expect(first.transactions).toHaveLength(1);

    // The devnet's own transaction, and one a client sends straight to the light node, go into the next block.
    const sent = await devnet.sendTransaction("devnet", {
      to: "0x00000000000000000000000000000000000000aa",
      value: 5n,
    });
    const client = new Wallet("0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d");
    const raw = await client.signTransaction({
      type: 2,
      chainId: 31_337,
      nonce: 0,
      to: "0x00000000000000000000000000000000000000bb",
      value: 7n,
      gasLimit: 21_000,
      maxFeePerGas: 10_000_000_000n,
      maxPriorityFeePerGas: 1n,
    });
    const clientHash = await rpc(light).call<string>("eth_sendRawTransaction", [raw]);
    await devnet.mine();
    for (const hash of [sent.hash, clientHash]) {
      const receipt = await rpc(urlOf(devnet, "devnet-full-1")).call<{ status: string } | null>(
        "eth_getTransactionReceipt",
        [hash],
      );
      expect(receipt?.status).toBe("0x1");
    }

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

  it("slows a light node's state reads in its front, and halts when every full node is stalled, refusing a reorg then", async (context) => {
    const devnet = await gethDevnet(() => context.skip(), 1, 1, true);
    const light = devnet.nodes().find((n) => n.name === "devnet-light-0")!;
    await devnet.fault("devnet-light-0", { kind: "slow", profile: "severe", seed: 7 });
    const delays = latencySampler(SLOW_PROFILES.severe, seededRandom(7));
    for (let i = 0; i < 3; i++) {
      const started = performance.now();
      await rpc(light.httpUrl).call("eth_getBalance", [DEV_ACCOUNT, "latest"]);
      expect(performance.now() - started).toBeGreaterThanOrEqual(delays() - 5);
    }
    await expect(devnet.fault("devnet-full-0", { kind: "slow", profile: "light" })).rejects.toThrow(
      /no latency front/,
    );
    await devnet.fault("devnet-light-0", { kind: "heal" });

    await devnet.fault("devnet-full-0", { kind: "stall" });
    const before = devnet.head("devnet").number;
    await mineTimes(devnet, 2);
    expect(devnet.head("devnet").number).toBe(before);
    expect(devnet.status().networks[0]!.halted).toBe(true);
    // No node at the head can build a new branch: the reorg is refused saying why, and the chain is unchanged.
    await devnet.fault("devnet-light-0", { kind: "stall" });
    await expect(devnet.reorg("devnet", 1)).rejects.toThrow(DevnetInputError);
    await expect(devnet.reorg("devnet", 1)).rejects.toThrow(/no node of devnet is at the head/);
    expect(devnet.head("devnet").number).toBe(before);
    await devnet.fault("devnet-light-0", { kind: "heal" });
    await devnet.fault("devnet-full-0", { kind: "heal" });
    await devnet.mine();
    expect(devnet.head("devnet").number).toBe(before + 1);
  }, 60_000);
});

/**
 * One full node and `lightNodes` light nodes on a chain whose timestamps start 1,000 s ago, one a block, so its blocks
 * up to now are built at once.
 */
async function pastDevnet(skip: () => void, lightNodes: number): Promise<Devnet> {
  const devnet = await startDevnet({
    implementation: "geth",
    gethBinary: await gethOrSkip(skip),
    blockTimeMs: 0,
    genesisTimestamp: Math.floor(Date.now() / 1000) - 1_000,
    now: () => 0,
    networks: [{ name: "devnet", chainId: 31_337, fullNodes: 1, lightNodes }],
  });
  running.push(devnet);
  return devnet;
}

describe("a geth node brought back from far behind", () => {
  it("syncs more than 128 blocks whose timestamps are past from its peers over devp2p, eth_syncing showing progress", async (context) => {
    // A chain that ran in real time (a replay once stopped at block 130, geth answering SYNCING once its head was 129
    // blocks behind the blocks it was handed).
    const devnet = await pastDevnet(() => context.skip(), 1);
    const full = rpc(urlOf(devnet, "devnet-full-0"));
    // Peered over devp2p, on loopback only.
    await waitFor(async () => Number(await full.call<string>("net_peerCount")) === 1, {
      what: "the full node's one peer",
    });
    const [peer] = await full.call<Array<{ network: { remoteAddress: string } }>>("admin_peers");
    expect(peer!.network.remoteAddress).toMatch(/^127\.0\.0\.1:/);

    await mineTimes(devnet, 160);
    await devnet.fault("devnet-light-0", { kind: "kill" });
    await devnet.fault("devnet-light-0", { kind: "heal" });
    const light = rpc(urlOf(devnet, "devnet-light-0"));
    // Told of the head only, the fresh node fetches the blocks from its peer: eth_syncing says how far it is.
    const seen: Array<false | { currentBlock: string; highestBlock: string }> = [];
    await waitFor(
      async () => {
        seen.push(await light.call<false | { currentBlock: string; highestBlock: string }>("eth_syncing"));
        return (await headOf(urlOf(devnet, "devnet-light-0"))).hash === devnet.head("devnet").hash;
      },
      {
        timeoutMs: 60_000,
        intervalMs: 5,
        what: () => `the light node at the head (eth_syncing: ${JSON.stringify(seen.at(-1))})`,
      },
    );
    const progress = seen.filter((s) => s !== false);
    expect(progress.length).toBeGreaterThan(0);
    // geth's first reports may come before it knows the head it syncs to (highestBlock 0).
    expect(Math.max(...progress.map((p) => Number(p.highestBlock)))).toBeGreaterThan(128);
    expect(devnet.status().nodes.find((n) => n.name === "devnet-light-0")!.lastError).toBeUndefined();
    // At the head, geth still reports a sync until it has indexed the transactions of the blocks it fetched.
    await waitFor(async () => (await light.call("eth_syncing")) === false, { what: "eth_syncing false" });
  }, 120_000);

  it("holds a light node where a stall or a lag found it while it caught up from its peers: geth fetches no further", async (context) => {
    // 300 blocks are built at once.
    const devnet = await pastDevnet(() => context.skip(), 3);
    const lights = ["devnet-light-0", "devnet-light-1", "devnet-light-2"];
    for (const name of lights) await devnet.fault(name, { kind: "kill" });
    await mineTimes(devnet, 300);
    const height = devnet.head("devnet").number;
    const headNumber = async (name: string) =>
      Number(await rpc(urlOf(devnet, name)).call<string>("eth_blockNumber"));

    // Healed, each is 300 blocks behind: told the head, it fetches the blocks from its peer. A fault lands mid-way.
    const LAG = 280;
    const faults = [
      ["devnet-light-0", { kind: "stall" }],
      ["devnet-light-1", { kind: "lag", blocks: LAG }],
    ] as const;
    const held = new Map<string, number>();
    for (const [name, fault] of faults) {
      await devnet.fault(name, { kind: "heal" });
      await waitFor(async () => (await headNumber(name)) > 0, { intervalMs: 5, what: `${name} catching up` });
      await devnet.fault(name, fault);
      held.set(name, await headNumber(name));
    }
    expect(Math.max(...held.values())).toBeLessThan(height);
    // The lagged node may be handed blocks up to its target (the head less LAG), the stalled one none.
    const allowed = (name: string) =>
      Math.max(held.get(name)!, name === "devnet-light-1" ? devnet.head("devnet").number - LAG : 0);
    const seen = new Map<string, number>();
    const look = async () => {
      for (const [name] of faults) seen.set(name, Math.max(seen.get(name) ?? 0, await headNumber(name)));
    };

    // A node without a fault, healed last, catches up from the same peer: by then the others had as long to go on.
    await devnet.fault("devnet-light-2", { kind: "heal" });
    await waitForProgress(
      async () => {
        await look();
        return (await headNumber("devnet-light-2")) === height;
      },
      () => headNumber("devnet-light-2"),
      { intervalMs: 20, what: "the node without a fault at the head" },
    );
    await look();
    for (const [name] of faults) expect(seen.get(name), name).toBeLessThanOrEqual(allowed(name));

    // Healed, both catch up from their peer after all.
    for (const [name] of faults) await devnet.fault(name, { kind: "heal" });
    for (const [name] of faults) {
      await waitForProgress(
        async () => (await headNumber(name)) === height,
        () => headNumber(name),
        { what: `${name} at the head once healed` },
      );
    }
  }, 180_000);
});

describe("lightfleet devnet --implementation geth", () => {
  it("runs geth nodes, takes fault commands, reorganises the chain, and stops every node on Ctrl-C", async (context) => {
    const gethPath = await gethOrSkip(() => context.skip());
    const child = spawn(
      process.execPath,
      [
        ...[
          "--import",
          "tsx",
          join(ROOT, "src/cli.ts"),
          "devnet",
          "--implementation",
          "geth",
          "--geth",
          gethPath,
        ],
        ...["--light-nodes", "1", "--block-time", "0", "--admin-port", "0"],
      ],
      { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] },
    );
    let output = "";
    child.stdout!.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stderr!.on("data", (chunk: Buffer) => (output += chunk.toString()));
    const stopped = new Promise((resolve) => child.once("exit", resolve));
    onTestFinished(async () => {
      if (child.exitCode === null) child.kill("SIGINT");
      await stopped;
    });
    const adminUrl = await waitFor(() => /^admin: (http:\/\/\S+)/m.exec(output)?.[1], {
      timeoutMs: 60_000,
      what: () => `the devnet banner (output so far: ${output})`,
    });
    const status = async () => (await (await fetch(`${adminUrl}/devnet/status`)).json()) as DevnetStatus;
    const pids = (await status()).nodes.map((n) => n.pid).filter((pid): pid is number => pid !== undefined);
    expect(pids).toHaveLength(2);
    const client = new HttpRpcClient((await status()).nodes[0]!.httpUrl, 10_000);
    expect(await client.call<string>("web3_clientVersion")).toMatch(/^Geth\//);

    const mined = await runCli(["devnet", "mine", "--admin", adminUrl]);
    expect(mined.stdout).toMatch(/^devnet: head 2 0x[0-9a-f]{64}\n$/);
    const stall = await runCli(["devnet", "stall", "devnet-light-0", "--admin", adminUrl]);
    expect(stall).toMatchObject({ code: 0, stdout: "devnet-light-0: stall (head 2)\n" });
    const reorg = await runCli(["devnet", "reorg", "devnet", "1", "--admin", adminUrl]);
    expect(reorg.code).toBe(0);
    expect(reorg.stdout).toMatch(/^devnet: reorganised 1 block\(s\), head 2 0x[0-9a-f]{64}\n$/);
    const [replaced] = reorg.stdout.match(/0x[0-9a-f]{64}/)!;
    expect(replaced).not.toBe(mined.stdout.match(/0x[0-9a-f]{64}/)![0]);

    child.kill("SIGINT");
    await stopped;
    expect(child.exitCode).toBe(0);
    await expectProcessesGone(pids);
  }, 120_000);

  it("says clearly when geth cannot be run", async () => {
    const result = await runCli(["devnet", "--implementation", "geth", "--geth", "/nonexistent/geth"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(
      /^lightfleet devnet: cannot run geth at \/nonexistent\/geth \(set devnet\.gethBinary/,
    );
    expect(result.stderr).not.toMatch(/\n\s+at /);
  });
});
