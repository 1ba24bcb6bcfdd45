import { startAnvil } from "../../src/devnet/anvil.js";
import { LOG_EMITTER_BYTECODE } from "../../src/devnet/devTransactions.js";
import { HttpRpcClient } from "../../src/rpc/httpRpcClient.js";
import { gethForTests } from "../support/geth/gethBinary.js";
import { startGethDev } from "../support/geth/gethNode.js";
import { waitFor } from "../support/waitFor.js";
import type { ChainFacts } from "./calls.js";

/** The node implementations the conformance table runs against. */
export type Implementation = "anvil" | "geth";

export interface ConformanceNode {
  implementation: Implementation;
  chainId: number;
  httpUrl: string;
  wsUrl: string;
  stop(): Promise<void>;
}

/** A node that seals a block only when told to (anvil_mine) or when a transaction comes (geth --dev.period 0). */
export async function startNode(
  implementation: Implementation,
): Promise<ConformanceNode | { missing: string }> {
  if (implementation === "anvil") {
    const node = await startAnvil({ name: "conformance", chainId: 31_337, noMining: true });
    return {
      implementation,
      chainId: 31_337,
      httpUrl: node.httpUrl,
      wsUrl: node.wsUrl,
      stop: () => node.stop(),
    };
  }
  const geth = await gethForTests();
  if (!geth.path) return { missing: geth.missing };
  const node = await startGethDev(geth.path, { periodSeconds: 0 });
  return {
    implementation,
    chainId: 1_337,
    httpUrl: node.httpUrl,
    wsUrl: node.wsUrl,
    stop: () => node.stop(),
  };
}

/**
 * Builds the same small chain on either node: the log emitter deployed, logs in three blocks placed around the node's
 * finalized and safe blocks (anvil: 64 and 32 below the head; geth --dev: the last multiple of 32, and the head),
 * `head` blocks in all; the chain then stands still, so both sides answer for the same blocks.
 */
export async function buildChain(node: ConformanceNode): Promise<ChainFacts> {
  const rpc = new HttpRpcClient(node.httpUrl, 10_000);
  const account = ((await rpc.call("eth_accounts", [])) as string[])[0]!;
  const blockNumber = async () => Number(await rpc.call("eth_blockNumber", []));
  /** Sends a transaction and has it sealed in a block of its own: its hash. */
  const transact = async (tx: Record<string, unknown>): Promise<string> => {
    const before = await blockNumber();
    const hash = (await rpc.call("eth_sendTransaction", [{ from: account, ...tx }])) as string;
    if (node.implementation === "anvil") await rpc.call("anvil_mine", ["0x1"]);
    await waitFor(
      async () =>
        (await rpc.call("eth_getTransactionReceipt", [hash])) !== null && (await blockNumber()) > before,
      {
        what: `transaction ${hash} sealed`,
      },
    );
    return hash;
  };
  const mineTo = async (height: number) => {
    for (let at = await blockNumber(); at < height; at = await blockNumber())
      if (node.implementation === "anvil") await rpc.call("anvil_mine", [`0x${(height - at).toString(16)}`]);
      else await transact({ to: account, value: "0x0" });
  };
  const deploy = await transact({ data: LOG_EMITTER_BYTECODE });
  const emitter = ((await rpc.call("eth_getTransactionReceipt", [deploy])) as { contractAddress: string })
    .contractAddress;
  const [middle, late, head] = node.implementation === "anvil" ? [50, 95, 100] : [20, 36, 40];
  const logTransaction = await transact({ to: emitter, data: "0x01" });
  await mineTo(middle - 1);
  await transact({ to: emitter, data: "0x02" });
  await mineTo(late - 1);
  await transact({ to: emitter, data: "0x03" });
  await mineTo(head);
  const receipt = (await rpc.call("eth_getTransactionReceipt", [logTransaction])) as { blockHash: string };
  const tag = async (name: string) =>
    Number(((await rpc.call("eth_getBlockByNumber", [name, false])) as { number: string }).number);
  return {
    head: await blockNumber(),
    finalized: await tag("finalized"),
    safe: await tag("safe"),
    account,
    emitter,
    logBlockHash: receipt.blockHash,
    logTransaction,
  };
}

/** One more block, with a log of the emitter (for the subscriptions). */
export async function emitLog(node: ConformanceNode, chain: ChainFacts): Promise<void> {
  const rpc = new HttpRpcClient(node.httpUrl, 10_000);
  await rpc.call("eth_sendTransaction", [{ from: chain.account, to: chain.emitter, data: "0x04" }]);
  if (node.implementation === "anvil") await rpc.call("anvil_mine", ["0x1"]);
}
