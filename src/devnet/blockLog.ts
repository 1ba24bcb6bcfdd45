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
  /** Set on blocks that replace reorganised ones: written into state before mining, so their hashes are new. */
  reorgSalt?: number;
}

/** One call to make on a node: mark a reorg, send transactions into its pool, or mine blocks at one timestamp. */
export type ReplayStep =
  | { kind: "salt"; value: number }
  | { kind: "send"; rawTransactions: string[] }
  | { kind: "mine"; timestamp: number; blocks: number };

export class BlockLog {
  private readonly blocks: LoggedBlock[] = [];
  private pending: string[] = [];
  /** Every transaction the log holds or held (lower-case raw bytes), so one taken from several nodes is logged once. */
  private readonly known = new Set<string>();
  /** Height each reorg branched from, in order. */
  private readonly forkPoints: number[] = [];

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
    this.known.add(raw.toLowerCase());
    this.pending.push(raw);
  }

  /**
   * Queues a transaction a client sent to a node (found in its pool) unless the log already has it; true when it was
   * new. The nodes mine only what the log says, so this is how a transaction sent to any node reaches a block.
   */
  adoptTransaction(raw: string): boolean {
    if (this.known.has(raw.toLowerCase())) return false;
    this.addTransaction(raw);
    return true;
  }

  /** Whether the log holds (or held) this transaction. */
  hasTransaction(raw: string): boolean {
    return this.known.has(raw.toLowerCase());
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

  /** Number of reorgs so far; a node that has seen them all is at this epoch. */
  get epoch(): number {
    return this.forkPoints.length;
  }

  /**
   * Replaces the newest `depth` blocks by as many new ones (a reorg) and returns the height they branch from. The
   * replaced blocks' transactions move to the first new block; every new block carries the reorg's number as a salt,
   * so none of them has the hash of the block it replaces.
   */
  reorganise(depth: number, nowMs: number): number {
    if (!Number.isInteger(depth) || depth < 1 || depth > this.height) {
      throw new RangeError(`reorg depth must be from 1 to the height ${this.height} (got ${depth})`);
    }
    const forkPoint = this.height - depth;
    const removed = this.blocks.splice(forkPoint, depth);
    this.forkPoints.push(forkPoint);
    const queued = this.pending;
    this.pending = removed.flatMap((block) => block.rawTransactions);
    for (const old of removed) this.append(Math.max(nowMs, old.timestamp * 1000)).reorgSalt = this.epoch;
    this.pending = queued;
    return forkPoint;
  }

  /** The lowest height a reorg since `epoch` branched from: a node last consistent at `epoch` is valid up to it. */
  forkPointSince(epoch: number): number | undefined {
    const since = this.forkPoints.slice(epoch);
    return since.length > 0 ? Math.min(...since) : undefined;
  }

  /** The calls that take a node from height `from` to height `to` (inclusive), fewest calls first. */
  replaySteps(from: number, to: number): ReplayStep[] {
    const steps: ReplayStep[] = [];
    // The last step, while it mines only plain blocks (no transactions, no salt) and may take more of them.
    let plainRun: { kind: "mine"; timestamp: number; blocks: number } | undefined;
    for (let n = from + 1; n <= Math.min(to, this.height); n++) {
      const block = this.blocks[n - 1]!;
      const plain = block.rawTransactions.length === 0 && block.reorgSalt === undefined;
      if (plain && plainRun?.timestamp === block.timestamp) {
        // Empty blocks sharing a second are mined by one evm_mine call (anvil gives them all that timestamp).
        plainRun.blocks += 1;
        continue;
      }
      if (block.reorgSalt !== undefined) steps.push({ kind: "salt", value: block.reorgSalt });
      if (block.rawTransactions.length > 0)
        steps.push({ kind: "send", rawTransactions: block.rawTransactions });
      const mine = { kind: "mine" as const, timestamp: block.timestamp, blocks: 1 };
      steps.push(mine);
      plainRun = plain ? mine : undefined;
    }
    return steps;
  }
}

/** A block following one at `parentTimestamp`: the current second, but never earlier than its parent. */
export function nextTimestamp(parentTimestamp: number, nowMs: number): number {
  return Math.max(parentTimestamp, Math.floor(nowMs / 1000));
}
