import { untilUnreachable } from "../waits.js";
import { randomBytes } from "node:crypto";
import type { Logger } from "../../log/logger.js";
import { HttpRpcClient } from "../../rpc/httpRpcClient.js";
import { STATE_READ_METHODS } from "../../rpc/stateReads.js";
import type { DrivenNodeStatus, NodeEndpoint, NodeHead } from "../drivenNode.js";
import type { ActiveFault } from "../faults.js";
import { targetHeight } from "../faults.js";
import type { LatencyFront } from "../latencyFront.js";
import { SLOW_PROFILES, latencySampler, seededRandom } from "../latencyProfile.js";
import type { BuiltPayload, EngineClient } from "./engineApi.js";
import type { GethNetwork } from "./gethDevnet.js";
import { RpcError } from "../../rpc/jsonRpc.js";

const RPC_TIMEOUT_MS = 10_000;
/** Blocks a node on the chain may lack and be handed; further behind, it syncs from its peers. */
const HANDED_BLOCKS = 2;
/** How long a node syncing from its peers may keep its head before it is handed the blocks instead. */
const PEER_SYNC_PATIENCE_MS = 15_000;
/** How long a node given new peers is waited for to connect to one. */
const PEER_WAIT_MS = 3_000;
/** Blocks handed to a node between two moves of its head while it is brought up to its target. */
const REPLAY_HEAD_STEP = 32;
/**
 * How long after each build starts its block is asked for: at once, then, while the block lacks transactions the pool
 * took, longer each time (a loaded machine may not have finished geth's first full build). After the last, the block
 * goes as it is and the rest wait for the next one.
 */
export const BUILD_WAITS_MS = [0, 50, 150, 400];

/** How a member's process is controlled; `respawn` of an owned node answers its new engine URL. */
export interface MemberControl {
  pid(): number | undefined;
  kill(): Promise<void>;
  respawn?: () => Promise<string | void>;
  stop(): Promise<void>;
}

/**
 * One geth node under the engine-API driver. Syncing is level-based: each round reads the node's head, finds where
 * it leaves the canonical chain (a fork, a node restarted from an older state) and hands it the canonical blocks from
 * there up to its target, then makes the target its head. Rounds, builds and fault operations run one at a time.
 */
export class GethMember {
  fault: ActiveFault | undefined;
  head: NodeHead | undefined;
  reachable = false;
  lastError: string | undefined;
  detached = false;
  front: LatencyFront | undefined;
  private readonly rpc: HttpRpcClient;
  private serial: Promise<void> = Promise.resolve();
  private queuedSync: Promise<void> | undefined;
  private verified = false;
  private lost = false;
  private slowDelay: (() => number) | undefined;
  /** Its devp2p identity (admin_nodeInfo), for the other nodes to add as a peer. */
  enode: string | undefined;
  /** Peers it was told to keep (admin_addPeer). */
  private readonly peers = new Set<string>();
  /** While it syncs from its peers: its head and since when (performance.now()) it has been there. */
  private catchUp: { head: number; since: number; told: number } | undefined;
  /** When (performance.now()) it was last given new peers. */
  private peersAddedAt: number | undefined;
  /**
   * Under a lag or stall: the head it was held at when the fault landed (lowered when a reorg takes a stalled node
   * back). It may not go past this, or a lag's target once that is higher, whatever it fetched from its peers.
   */
  private heldAt: number | undefined;
  /** A fault cut its sync from its peers short (see `isolated`). */
  private cutOff = false;

  constructor(
    readonly endpoint: NodeEndpoint,
    readonly owned: boolean,
    private readonly network: GethNetwork,
    private readonly engine: EngineClient,
    readonly control: MemberControl | undefined,
    private readonly logger: Logger,
  ) {
    this.rpc = new HttpRpcClient(endpoint.httpUrl, RPC_TIMEOUT_MS);
  }

  get name(): string {
    return this.endpoint.name;
  }

  get killed(): boolean {
    return this.fault?.kind === "kill";
  }

  /**
   * A node whose sync from its peers a lag, stall or fork cut short has no devp2p peers, and is no one's, until healed:
   * a beacon sync, once begun, fetches up to the head it was told and takes up again after a cancel, past the fault's
   * target. (Any other node keeps its peers: none is told a head under a fault, so none begins a sync from them.)
   */
  get isolated(): boolean {
    return this.cutOff && this.fault !== undefined;
  }

  publicEndpoint(): NodeEndpoint {
    return this.front
      ? { ...this.endpoint, httpUrl: this.front.httpUrl, wsUrl: this.front.wsUrl }
      : this.endpoint;
  }

  delayFor(methods: readonly string[]): number {
    if (this.fault?.kind !== "slow" || !this.slowDelay) return 0;
    return methods.some((m) => STATE_READ_METHODS.has(m)) ? this.slowDelay() : 0;
  }

  /** Height the node is handed blocks up to; undefined while stalled, killed or forked (it builds its own). */
  target(): number | undefined {
    if (this.fault?.kind === "fork") return undefined;
    return targetHeight(this.fault, this.network.hashes.length - 1);
  }

  async blockHashAt(number: number): Promise<string | undefined> {
    const block = await this.rpc.call<{ hash: string } | null>("eth_getBlockByNumber", [
      `0x${number.toString(16)}`,
      false,
    ]);
    return block?.hash;
  }

  /** The node must be on this network: its chain id and genesis. Throws otherwise. */
  async verify(): Promise<void> {
    const chainId = Number(await this.rpc.call<string>("eth_chainId"));
    if (chainId !== this.network.chainId) {
      throw new Error(`${this.name} has chain id ${chainId}, expected ${this.network.chainId}`);
    }
    const genesis = this.network.hashes[0];
    const own = await this.blockHashAt(0);
    if (genesis !== undefined && own !== genesis) {
      throw new Error(
        `${this.name} has genesis ${own}, expected ${genesis}: initialise its data directory with the devnet's ` +
          "genesis (a fleet member gets it before it starts)",
      );
    }
    this.verified = true;
  }

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
   * Builds the next canonical block on `parentHash` with the given transactions (sent to its pool first; one the node
   * refuses for good is left out). The node imports it with the others, in the next sync round.
   */
  build(
    parentHash: string,
    timestamp: number,
    pending: string[],
    feeRecipient: string,
  ): Promise<BuiltPayload> {
    let built: BuiltPayload | undefined;
    return this.exclusive(async () => {
      built = await this.buildOn(parentHash, timestamp, pending, feeRecipient);
    }).then(() => built!);
  }

  /**
   * A reorg's new branch, built by this node: it goes back to `forkPoint` (its blocks above are dropped: geth builds
   * on no older block of its own chain), then builds one block per timestamp on it, the first with `moved` (the
   * replaced blocks' transactions), importing each. Answers the branch's blocks in order.
   */
  buildBranch(
    forkPoint: NodeHead,
    timestamps: readonly number[],
    moved: readonly string[],
    feeRecipient: string,
  ): Promise<BuiltPayload[]> {
    const branch: BuiltPayload[] = [];
    return this.exclusive(async () => {
      await this.rewindTo(forkPoint);
      let parent = forkPoint.hash;
      for (const [i, timestamp] of timestamps.entries()) {
        const built = await this.buildOn(parent, timestamp, i === 0 ? [...moved] : [], feeRecipient);
        await this.engine.newPayload(built);
        parent = built.executionPayload.blockHash;
        await this.engine.setHead(parent);
        this.head = { number: Number(built.executionPayload.blockNumber), hash: parent };
        branch.push(built);
      }
    }).then(() => branch);
  }

  /** Takes the node back to `to`, a block of its chain (a stalled node after a reorg waits at the fork point). */
  rewind(to: NodeHead): Promise<void> {
    return this.exclusive(async () => {
      await this.rewindTo(to);
      if (this.heldAt !== undefined) this.heldAt = Math.min(this.heldAt, to.number);
    });
  }

  /** A forked node's own next block, on its own head: it imports it and makes it its head. */
  buildOwn(timestamp: number): Promise<void> {
    return this.exclusive(async () => {
      const head = await this.latest();
      const own = await this.engine.build(head.hash, {
        timestamp: Math.max(timestamp, head.timestamp + 1),
        prevRandao: `0x${randomBytes(32).toString("hex")}`,
        feeRecipient: feeRecipient(true),
      });
      await this.engine.newPayload(own);
      await this.engine.setHead(own.executionPayload.blockHash);
      this.head = { number: Number(own.executionPayload.blockNumber), hash: own.executionPayload.blockHash };
    });
  }

  /** Transactions in the node's pool the network has not taken yet, as raw bytes (recorded as taken). */
  async poolTransactions(taken: Set<string>): Promise<string[]> {
    const pool = await this.rpc.call<{ pending?: Record<string, Record<string, { hash?: string }>> }>(
      "txpool_content",
    );
    const hashes = Object.values(pool?.pending ?? {}).flatMap((byNonce) =>
      Object.values(byNonce).flatMap((tx) => (typeof tx.hash === "string" ? [tx.hash.toLowerCase()] : [])),
    );
    const found: string[] = [];
    for (const hash of hashes) {
      if (taken.has(hash)) continue;
      const raw = await this.rpc.call<string | null>("eth_getRawTransactionByHash", [hash]);
      if (!raw) continue;
      taken.add(hash);
      found.push(raw);
      this.logger.info(
        { node: this.name, hash },
        "devnet: transaction sent to a node taken into the next block",
      );
    }
    return found;
  }

  applyFault(fault: ActiveFault | { kind: "heal" }): Promise<void> {
    return this.exclusive(async () => {
      if (fault.kind === "heal") {
        if (this.fault?.kind === "kill" && this.control?.respawn) {
          // Still killed while it starts: a full node counts toward a halt until it is back.
          const engineUrl = await this.control.respawn();
          if (engineUrl) this.engine.url = engineUrl;
          this.verified = false;
        }
        this.clearFault();
        // A forked node goes back to the canonical chain in the next round (a reorg on the node).
        return;
      }
      if (fault.kind === "kill") {
        this.fault = fault;
        await this.control?.kill();
        if (!this.owned) await untilUnreachable(this.endpoint.httpUrl);
        this.markLost("killed");
        return;
      }
      if (fault.kind === "slow") {
        const seed = fault.seed ?? Math.floor(Math.random() * 0xffffffff);
        this.slowDelay = latencySampler(SLOW_PROFILES[fault.profile], seededRandom(seed));
      }
      this.fault = fault;
      if (fault.kind !== "slow" && this.reachable) {
        // lag, stall, fork: what the node is handed from now on is the fault's; a catch-up from its peers is not.
        await this.stopCatchUp().catch((error: unknown) =>
          this.logger.warn(
            { node: this.name, err: (error as Error).message },
            "devnet: node's catch-up from its peers not stopped",
          ),
        );
      }
      this.heldAt = fault.kind === "lag" || fault.kind === "stall" ? this.head?.number : undefined;
    });
  }

  /** Stops peering with `enode` (a node cut off from its peers), at once rather than at its next round. */
  async dropPeer(enode: string): Promise<void> {
    this.peers.delete(enode);
    if (this.reachable) await this.rpc.call("admin_removePeer", [enode]).catch(() => undefined);
  }

  status(): DrivenNodeStatus {
    const target = this.target();
    const pid = this.control?.pid();
    return {
      ...this.publicEndpoint(),
      owned: this.owned,
      ...(pid !== undefined ? { pid } : {}),
      fault: this.fault ?? null,
      target: target ?? null,
      head: this.head ?? null,
      reachable: this.reachable,
      ...(this.lastError ? { lastError: this.lastError } : {}),
    };
  }

  /** No fault any more (healed, or the fleet restarted the node): nothing holds it or cuts it off from its peers. */
  private clearFault(): void {
    this.fault = undefined;
    this.heldAt = undefined;
    this.cutOff = false;
  }

  private exclusive(task: () => Promise<void>): Promise<void> {
    const run = this.serial.then(task);
    this.serial = run.catch(() => undefined);
    return run;
  }

  private async latest(): Promise<NodeHead & { timestamp: number }> {
    const block = await this.rpc.call<{ number: string; hash: string; timestamp: string }>(
      "eth_getBlockByNumber",
      ["latest", false],
    );
    return { number: Number(block.number), hash: block.hash, timestamp: Number(block.timestamp) };
  }

  private async syncRound(): Promise<void> {
    // While a reorg builds its branch, the canonical chain is about to change: no node is handed the old one.
    if (this.detached || (this.owned && this.killed) || this.network.reorging) return;
    try {
      if (!this.verified) await this.verify();
      let latest = await this.latest();
      if (
        !this.owned &&
        this.fault &&
        (this.lost || (this.head !== undefined && latest.number < this.head.number))
      ) {
        // The fleet restarted it: a fresh process carries none of the old one's fault, as after a real restart.
        this.logger.info({ node: this.name, fault: this.fault }, "devnet node restarted: fault cleared");
        this.clearFault();
      }
      // Lower than last seen: restarted between two rounds, a new devp2p identity without peers.
      if (this.head !== undefined && latest.number < this.head.number) this.forgetPeers();
      await this.joinPeers();
      const target = this.target();
      const ceiling = this.heldAt === undefined ? undefined : Math.max(this.heldAt, target ?? 0);
      if (ceiling !== undefined && latest.number > ceiling) {
        // Past what its fault allows: blocks its peers still sent after the fault landed. Taken back.
        this.logger.warn(
          { node: this.name, head: latest.number, held: ceiling },
          "devnet: node went past its fault's height (fetched from its peers), taken back",
        );
        await this.setHeadNumber(ceiling);
        latest = await this.latest();
      }
      if (target !== undefined && latest.hash !== this.network.hashes[target]) {
        const from = await this.commonHeight(latest, target);
        if (from < target) {
          // Behind on the chain by more than a block or two: told of the head only, it syncs from its peers (as a
          // node that was away does). A branch of its own, or no peer to sync from: handed the blocks one by one.
          const fromPeers =
            this.syncsFromPeers() &&
            from === latest.number &&
            target - from > HANDED_BLOCKS &&
            (await this.syncFromPeers(latest, target));
          if (!fromPeers) await this.handBlocks(from, target);
          latest = await this.latest();
        }
      }
      if (target === undefined || latest.hash === this.network.hashes[target]) this.catchUp = undefined;
      this.head = { number: latest.number, hash: latest.hash };
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

  private async handBlocks(from: number, target: number): Promise<void> {
    for (let n = from + 1; n <= target; n++) {
      await this.engine.newPayload(this.network.payloads[n]!);
      // The head moves along every REPLAY_HEAD_STEP blocks, as a consensus client's would: geth keeps the state
      // of at most 128 blocks past its head in memory, and answers SYNCING to a block whose parent's is gone.
      if (n < target && n % REPLAY_HEAD_STEP === 0) await this.engine.setHead(this.network.hashes[n]!);
    }
    await this.engine.setHead(this.network.hashes[target]!);
  }

  /**
   * Whether a node behind may catch up from its peers. A full node is always handed the blocks (the gateway's
   * reference chain is never held back by peering), and so is a node under a fault: a lagged or stalled node's head
   * is what the fault says, and a head named to geth's beacon sync would be fetched past a lower target set later.
   */
  private syncsFromPeers(): boolean {
    return this.endpoint.role !== "full" && this.fault === undefined;
  }

  /**
   * Names the target the node's head (every round, as a consensus client does every slot: a sync may stop short of
   * a head named only once); the node fetches the blocks it lacks from its peers. False when it has no peer, or its
   * head has not moved for PEER_SYNC_PATIENCE_MS (the caller hands it the blocks instead).
   */
  private async syncFromPeers(latest: NodeHead, target: number): Promise<boolean> {
    if ((await this.connectedPeers()) === 0) return false;
    const now = performance.now();
    if (this.catchUp?.head !== latest.number)
      this.catchUp = { head: latest.number, since: now, told: target };
    else if (now - this.catchUp.since > PEER_SYNC_PATIENCE_MS) {
      this.logger.warn(
        { node: this.name, head: latest.number, target },
        "devnet: node not syncing from its peers, handed the blocks",
      );
      this.catchUp = undefined;
      return false;
    }
    this.catchUp.told = target;
    const status = await this.engine.announce(this.network.payloads[target]!);
    this.logger.debug(
      { node: this.name, head: latest.number, target, status },
      "devnet: node syncing from peers",
    );
    return true;
  }

  /**
   * Adds the network's other nodes as its devp2p peers (admin_addPeer; each node adds every other, so a pair is
   * connected whichever starts first) and drops peers no longer in it. A node behind waits for them to connect
   * (connectedPeers), so a node just started syncs from them rather than being handed the chain; one at the head does
   * not wait.
   */
  private async joinPeers(): Promise<void> {
    this.enode ??= (await this.rpc.call<{ enode: string }>("admin_nodeInfo")).enode;
    const current = new Set(
      this.isolated
        ? []
        : this.network.nodes.flatMap((n) =>
            n !== this && n.enode && !n.detached && !n.isolated ? [n.enode] : [],
          ),
    );
    let added = false;
    for (const enode of current) {
      if (this.peers.has(enode)) continue;
      await this.rpc.call("admin_addPeer", [enode]);
      this.peers.add(enode);
      added = true;
    }
    for (const enode of [...this.peers]) {
      if (current.has(enode)) continue;
      await this.rpc.call("admin_removePeer", [enode]);
      this.peers.delete(enode);
    }
    if (added) this.peersAddedAt = performance.now();
  }

  /** Its connected peers; a node given peers within PEER_WAIT_MS is waited for until one connects or that passes. */
  private async connectedPeers(): Promise<number> {
    const deadline = (this.peersAddedAt ?? -Infinity) + PEER_WAIT_MS;
    for (;;) {
      const count = Number(await this.rpc.call<string>("net_peerCount"));
      if (count > 0 || performance.now() >= deadline) return count;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  /** The highest height up to `target` where the node's chain is the canonical one. */
  private async commonHeight(latest: NodeHead, target: number): Promise<number> {
    let n = Math.min(latest.number, target);
    if (n === latest.number && latest.hash === this.network.hashes[n]) return n;
    while (n > 0 && (await this.blockHashAt(n)) !== this.network.hashes[n]) n--;
    return n;
  }

  private async buildOn(
    parentHash: string,
    timestamp: number,
    pending: string[],
    feeRecipient: string,
  ): Promise<BuiltPayload> {
    for (const raw of [...pending]) {
      await this.rpc.call("eth_sendRawTransaction", [raw]).catch((error: unknown) => {
        if (alreadyHas(error)) return;
        this.logger.warn(
          { node: this.name, err: (error as Error).message },
          "devnet: transaction refused, dropped",
        );
        pending.splice(pending.indexOf(raw), 1);
      });
    }
    let built: BuiltPayload | undefined;
    for (const waitMs of BUILD_WAITS_MS) {
      built = await this.engine.build(
        parentHash,
        { timestamp, prevRandao: `0x${randomBytes(32).toString("hex")}`, feeRecipient },
        waitMs,
      );
      if (built.executionPayload.transactions.length >= pending.length) break;
    }
    return built!;
  }

  /** Cuts the node off from its peers on both sides (static peers redial, so one side is not enough). */
  private async isolate(): Promise<void> {
    this.cutOff = true;
    for (const enode of [...this.peers]) await this.dropPeer(enode);
    const own = this.enode;
    if (own) await Promise.all(this.network.nodes.filter((n) => n !== this).map((n) => n.dropPeer(own)));
  }

  /**
   * Stops a catch-up from its peers under way (geth's beacon sync fetches up to the head it was last told, past any
   * lower target): debug_setHead cancels geth's download, which goes on otherwise. It refuses the head itself, so the
   * node is taken one block back, where it was a moment before. Nothing to do for a node not catching up.
   */
  private async stopCatchUp(): Promise<void> {
    if (this.cutOff) return;
    const latest = await this.latest();
    // Told a head it has not reached, or geth reports blocks still to fetch. (At the head, geth reports a sync until
    // it has indexed what it fetched: not a download, and a node just caught up is not taken back for it.)
    const progress = await this.rpc.call<{ currentBlock?: string; highestBlock?: string } | false>(
      "eth_syncing",
    );
    const fetching =
      (this.catchUp !== undefined && latest.number < this.catchUp.told) ||
      (progress !== false && Number(progress.highestBlock ?? 0) > Number(progress.currentBlock ?? 0));
    if (!fetching) return;
    this.catchUp = undefined;
    await this.isolate();
    if (latest.number === 0) return;
    await this.setHeadNumber(latest.number - 1);
    const now = await this.latest();
    this.head = { number: now.number, hash: now.hash };
    this.logger.info(
      { node: this.name, head: now.number },
      "devnet: node's catch-up from its peers stopped for a fault",
    );
  }

  /** debug_setHead to a height below the head (it cancels any download from peers too). */
  private async setHeadNumber(number: number): Promise<void> {
    await this.rpc.call("debug_setHead", [`0x${number.toString(16)}`]);
  }

  /** debug_setHead: the engine API moves no head back along its own chain (geth ignores such a forkchoice). */
  private async rewindTo(to: NodeHead): Promise<void> {
    await this.setHeadNumber(to.number);
    const latest = await this.latest();
    if (latest.hash !== to.hash)
      throw new Error(`${this.name} went back to block ${latest.number} ${latest.hash}, not ${to.hash}`);
    this.head = { number: latest.number, hash: latest.hash };
  }

  private forgetPeers(): void {
    this.enode = undefined;
    this.peers.clear();
    this.catchUp = undefined;
    this.peersAddedAt = undefined;
  }

  private markLost(message: string): void {
    // A restarted node is a new one: a new devp2p identity, no peers.
    this.forgetPeers();
    this.reachable = false;
    this.lost = true;
    this.verified = false;
    this.lastError = message;
  }
}

/** The canonical chain's blocks pay no one; a forked node's pay a marker address, so they differ from the chain's. */
export function feeRecipient(forked: boolean): string {
  return forked ? "0x00000000000000000000000000000000000f04c0" : `0x${"00".repeat(20)}`;
}

/** A reorg's new branch pays a marker address of its own (its blocks differ in prevRandao and timestamp too). */
export const REORG_FEE_RECIPIENT = "0x00000000000000000000000000000000000e0e0e";

/** Whether an error from eth_sendRawTransaction means the node has the transaction (or its nonce) already. */
export function alreadyHas(error: unknown): boolean {
  return error instanceof RpcError && /already known|nonce too low|already imported/i.test(error.message);
}
