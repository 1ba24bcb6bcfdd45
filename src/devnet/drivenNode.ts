import { untilUnreachable } from "./waits.js";
import { keccak256 } from "ethers";
import type { Logger } from "../log/logger.js";
import { RpcError } from "../rpc/jsonRpc.js";
import { HttpRpcClient } from "../rpc/httpRpcClient.js";
import type { BlockLog, ReplayStep } from "./blockLog.js";
import type { ActiveFault } from "./faults.js";
import { targetHeight } from "./faults.js";
import type { LatencyFront } from "./latencyFront.js";
import { STATE_READ_METHODS } from "../rpc/stateReads.js";
import { SLOW_PROFILES, latencySampler, seededRandom } from "./latencyProfile.js";
import { nextBaseFee } from "./nextBaseFee.js";

export type NodeRole = "full" | "light";

export interface NodeEndpoint {
  name: string;
  network: string;
  role: NodeRole;
  httpUrl: string;
  wsUrl: string;
}

export interface NodeHead {
  number: number;
  hash: string;
}

/** What the driver knows about one node; JSON-serialisable. */
export interface DrivenNodeStatus extends NodeEndpoint {
  /** Started (and restarted on heal) by the devnet, rather than attached. */
  owned: boolean;
  pid?: number;
  fault: ActiveFault | null;
  /** Height the driver mines it up to; null while stalled or killed. */
  target: number | null;
  head: NodeHead | null;
  reachable: boolean;
  lastError?: string;
}

/** How a node's process is controlled: owned nodes are killed and respawned by the devnet itself. */
export interface NodeProcessControl {
  pid(): number | undefined;
  kill(): Promise<void>;
  /** Starts a fresh process at the same address (owned nodes only). */
  respawn?: () => Promise<void>;
  stop(): Promise<void>;
}

/** Anvil answers this when a transaction is already in its pool (a replay retried after a failure). */
const ALREADY_KNOWN = /already (known|imported)|known transaction/i;

/** An address no one uses: setting its balance on one node alone gives that node a block of its own (a fork). */
const FORK_MARKER_ADDRESS = "0x00000000000000000000000000000000000f04c0";

/** Another unused address: its balance, set in every block of a reorg's new branch, makes that branch new. */
const REORG_MARKER_ADDRESS = "0x00000000000000000000000000000000000e0e60";

/** How long the driver waits for a node's answer: a producer that waited for a hung node would stand this long. */
export const NODE_RPC_TIMEOUT_MS = 10_000;

/**
 * One node under the block driver. Syncing is level-based: each round reads the node's height and mines the logged
 * blocks it lacks up to its target, so a node that restarted empty is replayed from genesis and a missed round is
 * harmless. Rounds and fault operations on a node run one at a time.
 */
export class DrivenNode {
  fault: ActiveFault | undefined;
  head: NodeHead | undefined;
  reachable = false;
  lastError: string | undefined;
  detached = false;
  private rpc: HttpRpcClient;
  private serial: Promise<void> = Promise.resolve();
  private queuedSync: Promise<void> | undefined;
  private verified = false;
  /** A sync round failed (or the node was killed) since the last successful one. */
  private lost = false;
  private fork: { snapshotId: string; height: number; markerPending: boolean } | undefined;
  /** The log's reorg epoch this node's blocks are known to match. */
  private epoch = 0;
  /** Transactions of this node already offered to the log (hashes), so each is fetched once. */
  private readonly adopted = new Set<string>();
  private collecting: Promise<void> | undefined;
  /** The devnet's front of the node, which clients reach it through (where `slow` takes effect). */
  front: LatencyFront | undefined;
  /** Draws the delays of the current `slow` fault. */
  private slowDelay: (() => number) | undefined;

  constructor(
    readonly endpoint: NodeEndpoint,
    readonly owned: boolean,
    private readonly log: BlockLog,
    private readonly chainId: number,
    private readonly genesisHash: string | undefined,
    readonly control: NodeProcessControl | undefined,
    private readonly logger: Logger,
  ) {
    this.rpc = new HttpRpcClient(endpoint.httpUrl, NODE_RPC_TIMEOUT_MS);
  }

  get name(): string {
    return this.endpoint.name;
  }

  /**
   * Whether the node's head is on the log's chain: false from a fork until it is healed (its blocks are then its
   * own), and false while a reorg newer than the node's last round stands (a round that began before the reorg ends
   * on the old branch, whose hash must not be taken for the new one's).
   */
  onCommonChain(): boolean {
    return this.fork === undefined && this.epoch === this.log.epoch;
  }

  /** The node as clients see it: through its front, when it has one. */
  publicEndpoint(): NodeEndpoint {
    return this.front
      ? { ...this.endpoint, httpUrl: this.front.httpUrl, wsUrl: this.front.wsUrl }
      : this.endpoint;
  }

  /** How long the front holds a call of these methods: a state read while the node is slow, else not at all. */
  delayFor(methods: readonly string[]): number {
    if (this.fault?.kind !== "slow" || !this.slowDelay) return 0;
    return methods.some((m) => STATE_READ_METHODS.has(m)) ? this.slowDelay() : 0;
  }

  target(): number | undefined {
    return targetHeight(this.fault, this.log.height);
  }

  /** Mines the node up to its target. Calls made while a round is waiting to start share that round. */
  sync(): Promise<void> {
    if (this.queuedSync) return this.queuedSync;
    const round = this.exclusive(async () => {
      this.queuedSync = undefined;
      await this.syncRound();
    });
    this.queuedSync = round;
    return round;
  }

  /**
   * First contact (again after every loss): the node must be on this network's chain, from this devnet's genesis.
   * Throws otherwise.
   */
  async verify(): Promise<void> {
    const chainId = Number(await this.rpc.call<string>("eth_chainId"));
    if (chainId !== this.chainId) {
      throw new Error(`${this.name} has chain id ${chainId}, expected ${this.chainId}`);
    }
    if (this.genesisHash) {
      const genesis = await this.rpc.call<{ hash: string } | null>("eth_getBlockByNumber", ["0x0", false]);
      if (genesis?.hash !== this.genesisHash) {
        throw new Error(
          `${this.name} has genesis ${genesis?.hash}, expected ${this.genesisHash}: start it with --timestamp ` +
            `${this.log.genesisTimestamp} --chain-id ${this.chainId} --no-mining and the default accounts`,
        );
      }
    }
    // Without it, the later blocks of one `evm_mine {timestamp, blocks}` call take the wall clock's second, which can
    // tick during the call; with it, they all get the given timestamp, as the log says.
    await this.rpc.call("anvil_setBlockTimestampInterval", [0]);
    this.verified = true;
  }

  /** Applies a fault; heal undoes whatever the node carries. Runs between sync rounds. */
  applyFault(fault: ActiveFault | { kind: "heal" }): Promise<void> {
    return this.exclusive(async () => {
      if (fault.kind === "heal") {
        await this.heal();
      } else if (fault.kind === "kill") {
        this.fault = fault;
        await this.control?.kill();
        if (!this.owned) await untilUnreachable(this.endpoint.httpUrl);
        this.markLost("killed");
      } else if (fault.kind === "fork") {
        if (!this.fork) {
          // The snapshot lets heal return to the common chain; the marker makes the next block this node's own.
          this.fork = await this.snapshot();
        }
        this.fault = fault;
      } else {
        if (fault.kind === "slow") {
          const seed = fault.seed ?? Math.floor(Math.random() * 0xffffffff);
          this.slowDelay = latencySampler(SLOW_PROFILES[fault.profile], seededRandom(seed));
        }
        this.fault = fault;
      }
    });
  }

  private async heal(): Promise<void> {
    const previous = this.fault;
    this.fault = undefined;
    if (previous?.kind === "kill" && this.control?.respawn) {
      await this.control.respawn();
      this.verified = false;
    }
    if (this.fork) {
      const { snapshotId } = this.fork;
      this.fork = undefined;
      // A node restarted since the fork has no snapshot to return to and is on the common chain anyway.
      if (previous?.kind !== "kill") await this.revertTo(snapshotId);
    }
  }

  private async snapshot(): Promise<{ snapshotId: string; height: number; markerPending: boolean }> {
    const height = Number(await this.rpc.call<string>("eth_blockNumber"));
    return { snapshotId: await this.rpc.call<string>("evm_snapshot"), height, markerPending: true };
  }

  private async revertTo(snapshotId: string): Promise<void> {
    await this.rpc.call("evm_revert", [snapshotId]);
    await this.restoreBaseFee();
  }

  /**
   * Takes the node back to height `to` after a reorg of the log. A forked node whose fork point is gone forks again
   * from there.
   */
  private async rollBack(height: number, to: number): Promise<void> {
    await this.rpc.call("anvil_rollback", [height - to]);
    await this.restoreBaseFee();
    if (this.fork && this.fork.height > to) this.fork = await this.snapshot();
  }

  /** anvil rewinds blocks and state but not its fee tracker: set the next block's base fee from the new head. */
  private async restoreBaseFee(): Promise<void> {
    const parent = await this.rpc.call<{
      number: string;
      baseFeePerGas: string;
      gasUsed: string;
      gasLimit: string;
    }>("eth_getBlockByNumber", ["latest", false]);
    // Block 1 keeps the genesis base fee (anvil's initial one), as a fresh node mines it.
    const fee =
      Number(parent.number) === 0
        ? BigInt(parent.baseFeePerGas)
        : nextBaseFee({
            baseFeePerGas: BigInt(parent.baseFeePerGas),
            gasUsed: BigInt(parent.gasUsed),
            gasLimit: BigInt(parent.gasLimit),
          });
    await this.rpc.call("anvil_setNextBlockBaseFeePerGas", [`0x${fee.toString(16)}`]);
  }

  status(): DrivenNodeStatus {
    const target = this.target();
    return {
      ...this.publicEndpoint(),
      owned: this.owned,
      ...(this.control?.pid() !== undefined ? { pid: this.control.pid() } : {}),
      fault: this.fault ?? null,
      target: target ?? null,
      head: this.head ?? null,
      reachable: this.reachable,
      ...(this.lastError ? { lastError: this.lastError } : {}),
    };
  }

  private exclusive(task: () => Promise<void>): Promise<void> {
    const run = this.serial.then(task);
    this.serial = run.catch(() => undefined);
    return run;
  }

  private async syncRound(): Promise<void> {
    // A killed node the devnet owns has nothing to do; an attached one is still watched for a restart.
    if (this.detached || (this.owned && this.fault?.kind === "kill")) return;
    try {
      if (!this.verified) await this.verify();
      const reported = Number(await this.rpc.call<string>("eth_blockNumber"));
      if (
        !this.owned &&
        this.fault &&
        (this.lost || (this.head !== undefined && reported < this.head.number))
      ) {
        // The fleet restarted it: a fresh process carries none of the old one's fault, as after a real restart.
        this.logger.info({ node: this.name, fault: this.fault }, "devnet node restarted: fault cleared");
        this.fault = undefined;
        this.fork = undefined;
      }
      let height = reported;
      if (this.epoch < this.log.epoch) {
        const forkPoint = this.log.forkPointSince(this.epoch);
        if (forkPoint !== undefined && height > forkPoint) {
          await this.rollBack(height, forkPoint);
          height = forkPoint;
        }
        this.epoch = this.log.epoch;
      }
      const target = this.target();
      if (target !== undefined && height < target) await this.runSteps(this.log.replaySteps(height, target));
      const latest = await this.rpc.call<{ number: string; hash: string }>("eth_getBlockByNumber", [
        "latest",
        false,
      ]);
      this.head = { number: Number(latest.number), hash: latest.hash };
      this.reachable = true;
      this.lost = false;
      this.lastError = undefined;
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      if (this.reachable && !this.detached)
        this.logger.warn({ node: this.name, err: message }, "devnet node out of reach");
      this.markLost(message);
    }
  }

  private markLost(message: string): void {
    this.reachable = false;
    this.lost = true;
    this.verified = false;
    this.lastError = message;
  }

  /**
   * Takes the transactions clients sent to this node (the executable ones in its pool) into the log, so the next
   * block carries them on every node: the devnet's nodes mine only what the log says.
   */
  collectPool(): Promise<void> {
    // One collection at a time: a block producer that stopped waiting for a slow node must not start a second one.
    this.collecting ??= this.collectOnce().finally(() => (this.collecting = undefined));
    return this.collecting;
  }

  private async collectOnce(): Promise<void> {
    for (const hash of await this.poolHashes()) await this.adopt(hash);
  }

  /** Hashes of the executable transactions in the node's pool. */
  private async poolHashes(): Promise<string[]> {
    const pool = await this.rpc.call<{ pending?: Record<string, Record<string, { hash?: string }>> }>(
      "txpool_content",
    );
    return Object.values(pool?.pending ?? {}).flatMap((byNonce) =>
      Object.values(byNonce).flatMap((tx) => (typeof tx.hash === "string" ? [tx.hash.toLowerCase()] : [])),
    );
  }

  /** Logs one transaction the node has (in its pool or a block) by hash, unless the log already has it. */
  private async adopt(hash: string): Promise<void> {
    if (this.adopted.has(hash)) return;
    const raw = await this.rpc.call<string | null>("eth_getRawTransactionByHash", [hash]);
    if (!raw) return;
    if (this.log.adoptTransaction(raw))
      this.logger.info(
        { node: this.name, hash },
        "devnet: transaction sent to a node taken into the next block",
      );
    if (this.adopted.size >= 10_000) this.adopted.clear();
    this.adopted.add(hash);
  }

  /** Empties the node's pool, logging first whatever the log does not have yet (a client's transaction). */
  private async clearPool(): Promise<void> {
    for (const hash of await this.poolHashes()) {
      await this.adopt(hash);
      await this.rpc.call("anvil_dropTransaction", [hash]);
    }
  }

  private async sendAll(rawTransactions: readonly string[]): Promise<void> {
    for (const raw of rawTransactions) {
      await this.rpc.call("eth_sendRawTransaction", [raw]).catch((error: unknown) => {
        if (!(error instanceof RpcError && ALREADY_KNOWN.test(error.message))) throw error;
      });
    }
  }

  /**
   * Mines one logged step with exactly its logged transactions, in the logged order: the pool is emptied (a client's
   * transaction in it goes to the log, for the next block), the step's transactions are sent in order (anvil mines its
   * pool first come, first served), and the mined block is checked. A transaction that reached the pool in between
   * would make this node's block its own (a fork): the block is taken back and the step mined again; a node that still
   * cannot mine it is left before the step, for the next round.
   */
  private async mineStep(
    step: { timestamp: number; blocks: number },
    sent: readonly string[],
    prepare: () => Promise<void>,
  ): Promise<void> {
    const expected = sent.map((raw) => keccak256(raw).toLowerCase());
    let first = 0;
    for (let attempt = 0; attempt < 3; attempt++) {
      await this.clearPool();
      await prepare();
      await this.sendAll(sent);
      first = Number(await this.rpc.call<string>("eth_blockNumber")) + 1;
      await this.rpc.call("evm_mine", [{ timestamp: step.timestamp, blocks: step.blocks }]);
      const mined = await this.rpc.call<{ transactions: string[] } | null>("eth_getBlockByNumber", [
        `0x${first.toString(16)}`,
        false,
      ]);
      const hashes = (mined?.transactions ?? []).map((h) => h.toLowerCase());
      if (hashes.length === expected.length && hashes.every((h, i) => h === expected[i])) return;
      for (const hash of hashes) if (!expected.includes(hash)) await this.adopt(hash);
      await this.rpc.call("anvil_rollback", [step.blocks]);
      await this.restoreBaseFee();
    }
    throw new Error(`${this.name}: block ${first} came out other than logged three times`);
  }

  private async runSteps(steps: ReplayStep[]): Promise<void> {
    let sent: readonly string[] = [];
    let salt: number | undefined;
    /** Mine steps of empty blocks with nothing to write first: mined together (minePlainRun). */
    let plain: Array<{ timestamp: number; blocks: number }> = [];
    const flush = async () => {
      if (plain.length > 0) await this.minePlainRun(plain);
      plain = [];
    };
    for (const step of steps) {
      if (step.kind === "send") {
        // Sent by the mine step that follows, into an empty pool, in order.
        await flush();
        sent = step.rawTransactions;
        continue;
      }
      if (step.kind === "salt") {
        await flush();
        salt = step.value;
        continue;
      }
      if (sent.length === 0 && salt === undefined && this.fork?.markerPending !== true) {
        plain.push(step);
        continue;
      }
      await flush();
      const marker = this.fork?.markerPending === true;
      if (this.fork) this.fork.markerPending = false;
      const saltValue = salt;
      // State written before mining (a reorg's salt, a fork's marker) is written again if the block is taken back.
      await this.mineStep(step, sent, async () => {
        if (saltValue !== undefined)
          await this.rpc.call("anvil_setBalance", [REORG_MARKER_ADDRESS, `0x${saltValue.toString(16)}`]);
        if (marker) await this.rpc.call("anvil_setBalance", [FORK_MARKER_ADDRESS, "0x1"]);
      });
      sent = [];
      salt = undefined;
    }
    await flush();
  }

  /**
   * One even run: blocks `interval` seconds apart from `timestamp` are one anvil_mine call with a block timestamp
   * interval (the same blocks, hashes included, as one evm_mine per block, an order of magnitude faster).
   */
  private async mineEvenRun(run: { timestamp: number; blocks: number; interval?: number }): Promise<void> {
    if (run.interval === undefined) {
      await this.rpc.call("evm_mine", [{ timestamp: run.timestamp, blocks: run.blocks }]);
      return;
    }
    await this.rpc.call("evm_setNextBlockTimestamp", [run.timestamp]);
    await this.rpc.call("anvil_setBlockTimestampInterval", [run.interval]);
    try {
      await this.rpc.call("anvil_mine", [`0x${run.blocks.toString(16)}`]);
    } finally {
      await this.rpc.call("anvil_removeBlockTimestampInterval", []);
    }
  }

  /**
   * Empty blocks, mined in few calls and checked together: a node replaying its chain after a restart is mostly empty
   * blocks, one per timestamp, and the four calls per block mineStep makes held it back for tens of seconds. The pool
   * is emptied first; if a transaction a client sent meanwhile still got into one of them, the run is taken back and
   * mined block by block, which adopts it into the log.
   */
  private async minePlainRun(steps: ReadonlyArray<{ timestamp: number; blocks: number }>): Promise<void> {
    if (steps.length === 1) return this.mineStep(steps[0]!, [], async () => undefined);
    for (let at = 0; at < steps.length; at += PLAIN_RUN_CHUNK) {
      const chunk = steps.slice(at, at + PLAIN_RUN_CHUNK);
      await this.clearPool();
      const first = Number(await this.rpc.call<string>("eth_blockNumber")) + 1;
      for (const run of evenRuns(chunk)) await this.mineEvenRun(run);
      const total = chunk.reduce((sum, step) => sum + step.blocks, 0);
      const counts = await this.rpc.batch(
        Array.from({ length: total }, (_, i) => ({
          method: "eth_getBlockTransactionCountByNumber",
          params: [`0x${(first + i).toString(16)}`],
        })),
      );
      if (counts.every((count) => typeof count === "string" && Number(count) === 0)) continue;
      await this.rpc.call("anvil_rollback", [total]);
      await this.restoreBaseFee();
      for (const step of chunk) await this.mineStep(step, [], async () => undefined);
    }
  }
}

/**
 * Steps in runs anvil can mine in one call: single blocks whose timestamps climb by the same interval, or one step of
 * its own (several blocks sharing a second, or a lone block). Order is kept.
 */
export function evenRuns(
  steps: ReadonlyArray<{ timestamp: number; blocks: number }>,
): Array<{ timestamp: number; blocks: number; interval?: number }> {
  const runs: Array<{ timestamp: number; blocks: number; interval?: number }> = [];
  for (const step of steps) {
    const last = runs.at(-1);
    if (last !== undefined && step.blocks === 1 && (last.interval !== undefined || last.blocks === 1)) {
      const lastTimestamp = last.timestamp + (last.blocks - 1) * (last.interval ?? 0);
      const interval = step.timestamp - lastTimestamp;
      if (interval >= 1 && (last.interval === undefined || last.interval === interval)) {
        last.interval = interval;
        last.blocks += 1;
        continue;
      }
    }
    runs.push({ timestamp: step.timestamp, blocks: step.blocks });
  }
  return runs;
}

/** Empty-block mine steps checked together in a replay. */
const PLAIN_RUN_CHUNK = 250;
