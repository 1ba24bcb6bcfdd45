/**
 * How fast the devnet replays a fresh light node to the head (what a restarted node waits for before it can be
 * Healthy), against a baseline measured in the same run: the same blocks mined one evm_mine call each, the least a
 * driver without batching must do. Blocks come 4 per second by default (timestamps shared within a second), as in
 * tests with a 250 ms block time, or one per second as in `up`'s devnet; block 1 carries the network marker
 * transaction.
 *
 *   npx tsx bench/devnetReplay.ts [blocks] [blocks per second]
 */
import { startAnvil } from "../src/devnet/anvil.js";
import { startDevnet } from "../src/devnet/devnet.js";
import { HttpRpcClient } from "../src/rpc/httpRpcClient.js";

const BLOCKS = Number(process.argv[2] ?? 2_000);
const PER_SECOND = Number(process.argv[3] ?? 4);

let clock = Date.now() - (BLOCKS / PER_SECOND) * 1000 - 60_000;
const devnet = await startDevnet({
  networks: [{ name: "bench", chainId: 31_337 }],
  blockTimeMs: 0,
  genesisTimestamp: Math.floor(clock / 1000),
  now: () => (clock += 1000 / PER_SECOND),
});
const nodes: Array<{ stop(): Promise<void> }> = [];
try {
  for (let i = 0; i < BLOCKS; i++) await devnet.mine();
  const full = new HttpRpcClient(devnet.nodes("bench")[0]!.httpUrl, 10_000);
  const timestamps: number[] = [];
  for (let n = 1; n <= BLOCKS; n++) {
    const block = await full.call<{ timestamp: string }>("eth_getBlockByNumber", [
      `0x${n.toString(16)}`,
      false,
    ]);
    timestamps.push(Number(block.timestamp));
  }
  const fresh = async (name: string) => {
    const node = await startAnvil({
      name,
      chainId: 31_337,
      timestamp: devnet.genesisTimestamp,
      noMining: true,
    });
    nodes.push(node);
    return node;
  };

  const baselineNode = await fresh("baseline");
  const baselineRpc = new HttpRpcClient(baselineNode.httpUrl, 10_000);
  let start = performance.now();
  for (const timestamp of timestamps) await baselineRpc.call("evm_mine", [{ timestamp, blocks: 1 }]);
  const baselineMs = performance.now() - start;

  const replayed = await fresh("replayed");
  start = performance.now();
  await devnet.attach({ name: "replayed", network: "bench", httpUrl: replayed.httpUrl });
  const replayMs = performance.now() - start;

  const head = await new HttpRpcClient(replayed.httpUrl, 10_000).call<{ hash: string }>(
    "eth_getBlockByNumber",
    ["latest", false],
  );
  if (head.hash !== devnet.head("bench").hash) throw new Error("the replayed node does not match the head");
  console.log(`replay of ${BLOCKS} blocks (${PER_SECOND} per second) to a fresh node`);
  console.log(`  baseline, one evm_mine per block: ${baselineMs.toFixed(0)} ms`);
  console.log(`  devnet attach (verify, batched replay, head check): ${replayMs.toFixed(0)} ms`);
  console.log(`  ratio devnet / baseline: ${(replayMs / baselineMs).toFixed(2)}`);
  console.log(`  devnet replay rate: ${((BLOCKS / replayMs) * 1000).toFixed(0)} blocks/s`);
} finally {
  await Promise.allSettled(nodes.map((node) => node.stop()));
  await devnet.stop();
}
