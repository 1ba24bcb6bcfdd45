import { EventEmitter } from "node:events";
import type { PeerConfig } from "../config/sections/network.js";
import type { PeerObservation } from "../health/types.js";
import type { BlockRef } from "../chain/blockRef.js";
import type { Logger } from "../log/logger.js";
import type { ProbeMetrics } from "../metrics/probeMetrics.js";
import { parseBlockRef, parseQuantity, toQuantity } from "../rpc/blocks.js";
import { HttpRpcClient } from "../rpc/httpRpcClient.js";
import { WsRpcClient } from "../rpc/wsRpcClient.js";
import { errorMessage, probeErrorReason } from "./probeError.js";
import { RecentHashes } from "./recentHashes.js";

export interface PeerFollowerOptions {
  network: string;
  peer: PeerConfig;
  expectedChainId: number;
  /** HTTP polling period when there is no live subscription. */
  pollIntervalMs: number;
  timeoutMs: number;
  clock?: () => number;
  logger: Logger;
  metrics?: ProbeMetrics;
  /** How many recent heights keep their hash. */
  historyDepth?: number;
  /**
   * False: no timer of its own; its owner calls `pollIfSilent()` every `pollIntervalMs`, so the owner's followers
   * and its own periodic work share one timer (each timer firing apart wakes the process, which costs more CPU than
   * a poll over WebSocket). True by default.
   */
  ownTimer?: boolean;
}

/** Missing heights fetched at most per new head (larger gaps are left to the next heads). */
const MAX_BACKFILL = 32;

/**
 * Follows one reserved full-node peer: `newHeads` over WebSocket when the peer has a ws URL (a new block counts the
 * moment the peer has it), polling otherwise or while the subscription is silent (over the WebSocket while it is
 * open, else over HTTP). Keeps the recent canonical hashes the engine needs for quorum and divergence checks, and
 * checks `eth_chainId` on every (re)connect.
 *
 * Emits `head` (BlockRef, the header or block as the node sent it) for every new head.
 */
export class PeerFollower extends EventEmitter {
  private readonly http: HttpRpcClient;
  private readonly ws: WsRpcClient | undefined;
  private readonly clock: () => number;
  private readonly hashes: RecentHashes;
  private head: BlockRef | undefined;
  private headSeenAt: number | undefined;
  private chainId: number | undefined;
  private lastOkAt: number | undefined;
  private lastErrorAt: number | undefined;
  private lastSubscriptionHeadAt: number | undefined;
  private pollTimer: NodeJS.Timeout | undefined;
  private polling = false;
  /** Changes of the chain id and the head; with `reachableAtRevision` and the hashes', what `revision()` counts. */
  private changes = 0;
  private reachableAtRevision = false;
  private stopped = true;

  constructor(private readonly options: PeerFollowerOptions) {
    super();
    this.clock = options.clock ?? Date.now;
    this.hashes = new RecentHashes(options.historyDepth ?? 256);
    this.http = new HttpRpcClient(options.peer.http, options.timeoutMs);
    if (options.peer.ws) {
      this.ws = new WsRpcClient({
        url: options.peer.ws,
        timeoutMs: options.timeoutMs,
        pingIntervalMs: Math.max(5_000, options.pollIntervalMs * 5),
      });
    }
  }

  get name(): string {
    return this.options.peer.name;
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    if (this.ws) {
      this.ws.on("open", () => void this.onWsOpen());
      this.ws.on("close", (reason: string) => this.log().debug({ reason }, "peer subscription closed"));
      this.ws.on("error", (error: Error) => this.log().debug({ err: error.message }, "peer websocket error"));
      this.ws.subscribe(["newHeads"], (header) => this.onHeader(header, "subscription"));
      this.ws.connect();
    }
    void this.poll();
    if (this.options.ownTimer ?? true)
      this.pollTimer = setInterval(() => void this.poll(), this.options.pollIntervalMs);
  }

  /** Polls unless the subscription is live (or a poll is under way): its owner's timer, with `ownTimer: false`. */
  pollIfSilent(): void {
    void this.poll();
  }

  stop(): void {
    this.stopped = true;
    clearInterval(this.pollTimer);
    this.ws?.close();
    this.ws?.removeAllListeners();
  }

  /** What is known of the node, under `name` (by default its own: a follower shared by roles reports each's). */
  observation(name = this.options.peer.name): PeerObservation {
    const observation: PeerObservation = {
      name,
      reachable: this.isReachable(),
      recentHashes: this.hashes.view(),
    };
    if (this.chainId !== undefined) observation.chainId = this.chainId;
    if (this.head) observation.head = this.head;
    if (this.headSeenAt !== undefined) observation.headSeenAt = this.headSeenAt;
    // First contact under way: nothing has failed, and the head a round needs has not come yet (its chain id may
    // have, over WebSocket, while the first head read is slow on a loaded machine).
    const firstContact = !observation.reachable && this.lastOkAt === undefined;
    if (this.lastErrorAt === undefined && (firstContact || this.head === undefined))
      observation.pending = true;
    return observation;
  }

  /**
   * A number that grows whenever what `observation()` says of the node's chain may have changed: its head, its recent
   * hashes, its chain id, whether it is reachable (read now). An owner that recounts every poll period skips the
   * recount while the numbers of its followers stay (the chain of a node is only seen to move at a poll or a head).
   */
  revision(): number {
    const reachable = this.isReachable();
    if (reachable !== this.reachableAtRevision) {
      this.reachableAtRevision = reachable;
      this.changes++;
    }
    return this.changes + this.hashes.revision;
  }

  /** Polls right away (e.g. when a round wants fresh data); resolves when done. */
  refresh(): Promise<void> {
    return this.poll(true);
  }

  private isReachable(): boolean {
    if (this.ws?.connected && this.chainId !== undefined) return true;
    if (this.lastOkAt === undefined) return false;
    return this.lastErrorAt === undefined || this.lastOkAt >= this.lastErrorAt;
  }

  private subscriptionLive(): boolean {
    if (!this.ws?.connected || this.lastSubscriptionHeadAt === undefined) return false;
    // A subscription that has delivered nothing for a few poll periods is not trusted on its own.
    return this.clock() - this.lastSubscriptionHeadAt < this.options.pollIntervalMs * 3;
  }

  private async onWsOpen(): Promise<void> {
    try {
      const chainId = parseQuantity(await this.ws!.call("eth_chainId"));
      this.setChainId(chainId);
      this.lastOkAt = this.clock();
    } catch (error) {
      this.log().warn({ err: errorMessage(error) }, "peer chain id check failed");
    }
    // Catch up on anything missed while disconnected.
    void this.poll(true);
  }

  private async poll(force = false): Promise<void> {
    if (this.stopped || this.polling || (!force && this.subscriptionLive())) return;
    this.polling = true;
    const started = performance.now();
    try {
      let latest: unknown;
      if (this.ws?.connected && this.chainId !== undefined) {
        // Over the open WebSocket, whose chain id was checked when it (re)connected: a frame each way, where an HTTP
        // request cost several times the CPU (a poll every period while newHeads is silent, per node, per worker).
        latest = await this.ws.call("eth_getBlockByNumber", ["latest", false]);
      } else {
        const [chainId, polled] = await this.http.batch([
          { method: "eth_chainId" },
          { method: "eth_getBlockByNumber", params: ["latest", false] },
        ]);
        if (polled instanceof Error) throw polled;
        if (!(chainId instanceof Error)) this.setChainId(parseQuantity(chainId));
        latest = polled;
      }
      this.lastOkAt = this.clock();
      this.onHeader(latest, "poll");
    } catch (error) {
      this.lastErrorAt = this.clock();
      this.options.metrics?.errors.inc({
        network: this.options.network,
        target: "peer",
        reason: probeErrorReason(error),
      });
      this.log().debug({ err: errorMessage(error) }, "peer poll failed");
    } finally {
      this.polling = false;
      this.options.metrics?.duration.observe(
        { network: this.options.network, target: "peer" },
        (performance.now() - started) / 1000,
      );
    }
  }

  private setChainId(chainId: number | undefined): void {
    if (chainId === undefined || chainId === this.chainId) return;
    this.chainId = chainId;
    this.changes++;
    if (chainId !== this.options.expectedChainId) {
      this.options.metrics?.errors.inc({
        network: this.options.network,
        target: "peer",
        reason: "wrong-chain",
      });
      this.log().error(
        { chainId, expected: this.options.expectedChainId },
        "reserved peer is on the wrong chain; it is ignored for the reference head",
      );
    }
  }

  private onHeader(header: unknown, via: "subscription" | "poll"): void {
    const ref = parseBlockRef(header);
    if (!ref) return;
    const now = this.clock();
    if (via === "subscription") {
      this.lastSubscriptionHeadAt = now;
      this.lastOkAt = now;
    }
    const parentHash = (header as { parentHash?: unknown }).parentHash;
    if (typeof parentHash === "string" && ref.number > 0)
      this.hashes.set(ref.number - 1, parentHash.toLowerCase());
    const previous = this.head;
    if (previous && previous.number === ref.number && previous.hash === ref.hash) return;
    const reorg = previous !== undefined && ref.number <= previous.number;
    if (reorg) this.hashes.truncateAbove(ref.number);
    this.hashes.set(ref.number, ref.hash);
    this.head = ref;
    this.headSeenAt = now;
    this.changes++;
    if (previous && ref.number > previous.number + 2) void this.backfill(previous.number + 1, ref.number - 2);
    // The header goes with it, so a listener that wants the block's fields needs no second call to the node.
    this.emit("head", ref, header);
  }

  /** Fetches hashes of heights skipped between two heads, so quorum checks can compare any recent height. */
  private async backfill(from: number, to: number): Promise<void> {
    const start = Math.max(from, to - MAX_BACKFILL + 1);
    const heights = Array.from({ length: to - start + 1 }, (_, i) => start + i).filter(
      (h) => !this.hashes.has(h),
    );
    if (heights.length === 0) return;
    try {
      const results = await this.http.batch(
        heights.map((h) => ({ method: "eth_getBlockByNumber", params: [toQuantity(h), false] })),
      );
      results.forEach((result) => {
        const ref = parseBlockRef(result);
        if (ref && this.head && ref.number <= this.head.number) this.hashes.set(ref.number, ref.hash);
      });
    } catch (error) {
      this.log().debug({ err: errorMessage(error) }, "peer back-fill failed");
    }
  }

  private log(): Logger {
    return this.options.logger.child({ network: this.options.network, peer: this.options.peer.name });
  }
}
