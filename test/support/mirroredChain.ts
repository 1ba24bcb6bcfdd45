import type { AnvilNode } from "../../src/devnet/anvil.js";
import { startAnvil } from "../../src/devnet/anvil.js";
import { HttpRpcClient } from "../../src/rpc/httpRpcClient.js";

/**
 * A minimal block mirror for tests that do not need the whole devnet: anvil nodes started from one genesis timestamp
 * and mined with the same block timestamps share block hashes. `mine` adds a block to the chosen nodes only, so a
 * node left out lags; `catchUp` replays the missing blocks onto a node. They run one at a time, in call order: a
 * block mined on a node while its catch-up replays would take the place of an older block with a newer timestamp.
 */
export class MirroredChain {
  readonly genesis = Math.floor(Date.now() / 1000) - 3_600;
  private height = 0;
  private readonly started: AnvilNode[] = [];
  private serial: Promise<unknown> = Promise.resolve();

  constructor(readonly chainId = 31_337) {}

  get head(): number {
    return this.height;
  }

  async node(name: string, chainId = this.chainId): Promise<AnvilNode> {
    const node = await startAnvil({ name, chainId, timestamp: this.genesis, noMining: true });
    this.started.push(node);
    return node;
  }

  /**
   * Mines the next block, with the shared timestamp, on each of `nodes` (all of them, even if one fails). A node that
   * missed blocks (left out before, or new) gets them first, so it never takes a block at another block's height.
   */
  mine(nodes: ReadonlyArray<AnvilNode>): Promise<void> {
    return this.exclusive(async () => {
      this.height++;
      const results = await Promise.allSettled(nodes.map((n) => this.mineUpTo(n, this.height)));
      const failed = results.find((r) => r.status === "rejected");
      if (failed) throw failed.reason;
    });
  }

  /** Mines the blocks `node` is missing up to the chain's head, with their shared timestamps. */
  catchUp(node: AnvilNode): Promise<void> {
    return this.exclusive(() => this.mineUpTo(node, this.height));
  }

  /** Mines a block only `node` has, with another timestamp: it leaves the shared chain (a fork). */
  fork(node: AnvilNode): Promise<void> {
    return this.exclusive(async () => {
      const client = rpc(node);
      const have = Number(await client.call<string>("eth_blockNumber"));
      await client.call("evm_mine", [this.timestampOf(have + 1) + 1]);
    });
  }

  async stopAll(): Promise<void> {
    await Promise.all(this.started.splice(0).map((n) => n.stop()));
  }

  private async mineUpTo(node: AnvilNode, height: number): Promise<void> {
    const client = rpc(node);
    const have = Number(await client.call<string>("eth_blockNumber"));
    for (let n = have + 1; n <= height; n++) await client.call("evm_mine", [this.timestampOf(n)]);
  }

  private exclusive(task: () => Promise<void>): Promise<void> {
    const run = this.serial.then(task);
    this.serial = run.catch(() => undefined);
    return run;
  }

  private timestampOf(height: number): number {
    return this.genesis + height * 2;
  }
}

function rpc(node: AnvilNode): HttpRpcClient {
  return new HttpRpcClient(node.httpUrl, 5_000);
}
