/**
 * The canonical chain of one devnet network, as the block driver records it: for every height, the timestamp it was
 * mined at and the raw transactions it holds. Any anvil node started from the same genesis that is mined with these
 * steps ends up with the same block hashes, so the log is all that is needed to mirror or replay a node.
 */
export interface LoggedBlock {
  number: number;
  /** Seconds; never lower than the parent's (anvil accepts equal timestamps, so blocks may share a second). */
  timestamp: number;
  /** Signed transactions, in block order. */
  rawTransactions: string[];
}

/** One call to make on a node: send transactions into its pool, or mine blocks at one timestamp. */
export type ReplayStep =
  { kind: "send"; rawTransactions: string[] } | { kind: "mine"; timestamp: number; blocks: number };

export class BlockLog {
  private readonly blocks: LoggedBlock[] = [];
  private pending: string[] = [];

  constructor(readonly genesisTimestamp: number) {}

  /** Height of the newest block (0 = only genesis). */
  get height(): number {
    return this.blocks.length;
  }

  block(number: number): LoggedBlock | undefined {
    return this.blocks[number - 1];
  }

  /** Queues a signed transaction for the next block. */
  addTransaction(raw: string): void {
    this.pending.push(raw);
  }

  get pendingTransactions(): readonly string[] {
    return this.pending;
  }

  /** Appends the next block at the wall-clock second `nowMs` (kept monotonic), with every queued transaction. */
  append(nowMs: number): LoggedBlock {
    const parent = this.blocks.at(-1)?.timestamp ?? this.genesisTimestamp;
    const block: LoggedBlock = {
      number: this.height + 1,
      timestamp: nextTimestamp(parent, nowMs),
      rawTransactions: this.pending,
    };
    this.pending = [];
    this.blocks.push(block);
    return block;
  }

  /** The calls that take a node from height `from` to height `to` (inclusive), fewest calls first. */
  replaySteps(from: number, to: number): ReplayStep[] {
    const steps: ReplayStep[] = [];
    for (let n = from + 1; n <= Math.min(to, this.height); n++) {
      const block = this.blocks[n - 1]!;
      const last = steps.at(-1);
      if (block.rawTransactions.length > 0) {
        steps.push({ kind: "send", rawTransactions: block.rawTransactions });
        steps.push({ kind: "mine", timestamp: block.timestamp, blocks: 1 });
      } else if (last?.kind === "mine" && last.timestamp === block.timestamp && !endsWithSend(steps)) {
        // Empty blocks sharing a second are mined by one evm_mine call (anvil gives them all that timestamp).
        last.blocks += 1;
      } else {
        steps.push({ kind: "mine", timestamp: block.timestamp, blocks: 1 });
      }
    }
    return steps;
  }
}

/** A block following one at `parentTimestamp`: the current second, but never earlier than its parent. */
export function nextTimestamp(parentTimestamp: number, nowMs: number): number {
  return Math.max(parentTimestamp, Math.floor(nowMs / 1000));
}

/** Whether the last mine step carries transactions (it must then stay a single-block step). */
function endsWithSend(steps: ReplayStep[]): boolean {
  return steps.length >= 2 && steps.at(-2)?.kind === "send";
}
