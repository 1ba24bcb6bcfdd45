import type { Logger } from "../log/logger.js";
import { stopChild } from "../process/spawnChild.js";
import { HttpRpcClient } from "../rpc/httpRpcClient.js";
import type { AnvilNode } from "./anvil.js";
import { startAnvil } from "./anvil.js";
import type { NodeProcessControl } from "./drivenNode.js";

/** Kill and respawn of a devnet-owned anvil: the new process listens on the same port, so URLs stay valid. */
export function ownedControl(
  first: AnvilNode,
  spawn: { chainId: number; timestamp: number; logger: Logger },
): NodeProcessControl {
  let current = first;
  const alive = () => current.process.exitCode === null && current.process.signalCode === null;
  const kill = async () => {
    if (!alive()) return;
    const exited = new Promise((resolve) => current.process.once("exit", resolve));
    current.process.kill("SIGKILL");
    await exited;
  };
  return {
    pid: () => (alive() ? current.process.pid : undefined),
    kill,
    respawn: async () => {
      await kill();
      current = await startAnvil({
        name: first.name,
        chainId: spawn.chainId,
        timestamp: spawn.timestamp,
        port: first.port,
        noMining: true,
        logger: spawn.logger,
      });
    },
    stop: () => stopChild(current.process, 1_000),
  };
}

/** Hash of a node's block 0, which every node of its network must share. */
export async function genesisHashOf(anvil: AnvilNode): Promise<string> {
  const genesis = await new HttpRpcClient(anvil.httpUrl, 10_000).call<{ hash: string } | null>(
    "eth_getBlockByNumber",
    ["0x0", false],
  );
  if (!genesis) throw new Error(`${anvil.name}: no genesis block`);
  return genesis.hash;
}
