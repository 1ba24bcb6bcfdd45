import type { AnvilNode } from "../../src/devnet/anvil.js";
import { startAnvil } from "../../src/devnet/anvil.js";
import { HttpRpcClient } from "../../src/rpc/httpRpcClient.js";

/**
 * A minimal block mirror for tests that do not need the whole devnet: anvil nodes started from one genesis timestamp
 * and mined with the same block timestamps share block hashes. `mine` adds a block to the chosen nodes only, so a
 * node left out lags; `catchUp` replays the missing blocks onto a node.
 */
export class MirroredChain {
  readonly genesis = Math.floor(Date.now() / 1000) - 3_600;
  private height = 0;
  private readonly started: AnvilNode[] = [];

  constructor(readonly chainId = 31_337) {}

  get head(): number {
    return this.height;
  }

  async node(name: string, chainId = this.chainId): Promise<AnvilNode> {
    const node = await startAnvil({ name, chainId, timestamp: this.genesis, noMining: true });
    this.started.push(node);
    return node;
  }

  /** Mines the next block, with the shared timestamp, on each of `nodes` (all of them, even if one fails). */
  async mine(nodes: ReadonlyArray<AnvilNode>): Promise<void> {
    this.height++;
    const timestamp = this.timestampOf(this.height);
    const results = await Promise.allSettled(nodes.map((n) => rpc(n).call("evm_mine", [timestamp])));
    const failed = results.find((r) => r.status === "rejected");
    if (failed) throw failed.reason;
  }

  /** Mines the blocks `node` is missing up to the chain's head, with their shared timestamps. */
  async catchUp(node: AnvilNode): Promise<void> {
    const client = rpc(node);
    const have = Number(await client.call<string>("eth_blockNumber"));
    for (let n = have + 1; n <= this.height; n++) await client.call("evm_mine", [this.timestampOf(n)]);
  }

  /** Mines a block only `node` has, with another timestamp: it leaves the shared chain (a fork). */
  async fork(node: AnvilNode): Promise<void> {
    const client = rpc(node);
    const have = Number(await client.call<string>("eth_blockNumber"));
    await client.call("evm_mine", [this.timestampOf(have + 1) + 1]);
  }

  async stopAll(): Promise<void> {
    await Promise.all(this.started.splice(0).map((n) => n.stop()));
  }

  private timestampOf(height: number): number {
    return this.genesis + height * 2;
  }
}

function rpc(node: AnvilNode): HttpRpcClient {
  return new HttpRpcClient(node.httpUrl, 5_000);
}
