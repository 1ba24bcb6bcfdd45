import type { ResponseSink, Upstreams } from "./upstreams.js";
import { EventEmitter } from "node:events";
import type { PeerConfig } from "../../config/sections/network.js";
import type { PeerObservation } from "../../health/types.js";
import type { BlockRef } from "../../chain/blockRef.js";
import type { Logger } from "../../log/logger.js";
import { PeerFollower } from "../../probe/peerFollower.js";
import type { JsonRpcRequest } from "../../rpc/jsonRpc.js";
import { isKnownMethod } from "../rpc/methodPolicy.js";
import { WsRpcClient } from "../../rpc/wsRpcClient.js";
import type { Candidate } from "./balancer.js";
import { agreeOnHead, type HeadAgreement } from "./agreedHead.js";
import { AgreedTags, type TagSource } from "./agreedTags.js";
import { inPanic } from "./balancer.js";
import { forward } from "./forward.js";
import { NodeFollowers } from "./nodeFollowers.js";
import { WsCallAnswer } from "./wsCallAnswer.js";
import type { Upstream, UpstreamSource } from "./upstreamSource.js";

const CALLS_PING_MS = 15_000;
/** How often safe and finalized are asked again while unknown, between heads. */
const TAGS_RETRY_MS = 5_000;
/**
 * The least time between two readings of safe and finalized (2 calls to each source): they move far slower than a
 * fast chain's heads (once an epoch on Ethereum, with L1 batches on a rollup), so reading them at every head of a 1 s
 * or 250 ms chain cost the sources calls that mostly found them where they were.
 */
const TAGS_MIN_INTERVAL_MS = 2_000;

interface Member {
  upstream: Upstream;
  /** Its node's follower, which a reserved peer at the same URL may share. */
  follower: PeerFollower;
  /** Removes its listener from the follower. */
  stopListening: () => void;
  /** The WebSocket calls are sent over, when the node has a ws URL. */
  calls: WsRpcClient | undefined;
  outstanding: number;
}

/**
 * Calls go over HTTP while a node's socket is backed up this far (a node that stopped reading), so one slow node
 * cannot make the gateway buffer without bound.
 */
const MAX_CALL_BACKLOG_BYTES = 4 * 1024 * 1024;

/**
 * Which calls go over a node's WebSocket: the standard methods, except those whose answers can run to megabytes (one
 * of them would hold up every other call sharing the socket). Anything else goes over HTTP, where node software
 * answers an unknown method in the standard way (anvil's WebSocket says -32602, not -32601).
 */
const overWebSocket = (method: string) =>
  isKnownMethod(method) && method !== "eth_getLogs" && method !== "eth_getBlockReceipts";

export interface NetworkUpstreamsOptions {
  network: string;
  chainId: number;
  source: UpstreamSource;
  /** Head polling period when a node's newHeads subscription is down. */
  pollIntervalMs: number;
  timeoutMs: number;
  logger: Logger;
  /** The network's reserved peers: a block is served once they agree on it (see agreeOnHead). */
  peers?: ReadonlyArray<PeerConfig>;
  /** The least time between two readings of safe and finalized (default TAGS_MIN_INTERVAL_MS). */
  tagsMinIntervalMs?: number;
}

/**
 * The upstreams of one network as the gateway uses them: each followed by newHeads (HTTP polling as fallback, chain
 * id checked), with its outstanding request count. A block is served only once the reserved peers agree on its
 * hash, or, while they do not have it yet, two routed nodes (every reachable one in panic) have it (`agreeOnHead`):
 * a node that forks is outvoted, and one with another block than the peers or the agreed chain gets no calls. Emits `head` (upstream name, BlockRef, the node's header or undefined) when the
 * agreed head moves, `nodeHead` (upstream name) at every node's new head, and `change` when the set or the served head moves.
 *
 * Calls to a node go over one WebSocket kept open for them when the node has a ws URL: many calls share a socket, so
 * under load one read or write carries several, where HTTP costs a write and a read per call (pass-through went from
 * 0.44-0.47x to 0.50-0.70x nginx's rate in `npm run bench:gateway`). While it is not open (connecting, or
 * reconnecting after a failure), calls use HTTP.
 */
/** A hash's place on the nodes' chains, and on the serving nodes' (null: not asked yet). */
interface HashLookup {
  block: { number: number; holders: Set<string> } | undefined;
  served: number | undefined | null;
}

const MAX_HASH_LOOKUPS = 10_000;

export class NetworkUpstreams extends EventEmitter implements Upstreams {
  private readonly members = new Map<string, Member>();
  private served: number | undefined;
  private agreement: HeadAgreement = agreeOnHead([], []);
  private readonly unsubscribe: () => void;
  /**
   * Every poll period: polls each follower whose newHeads is silent, then recounts the agreement if a follower's view
   * changed without a head (a node that stops answering changes who votes). One timer for all of them, as each timer
   * firing apart wakes the process.
   */
  private readonly recount: NodeJS.Timeout;
  /** One follower per node, shared by a reserved peer and an upstream at the same URL. */
  private readonly followers: NodeFollowers;
  /** The reserved peers, each with its node's follower. */
  private readonly peers: Array<{ config: PeerConfig; follower: PeerFollower }> = [];
  /**
   * The followers' revision at the last recount: a period that finds it unchanged skips the recount (the agreement
   * depends only on their views and the set, whose changes recount at once), which was most of an idle round's work.
   */
  private countedRevision = -1;
  /** The safe and finalized blocks, followed like the head (asked again after agreed heads, at most every 2 s). */
  private readonly tags: AgreedTags;
  private tagsRetriedAt = 0;
  /**
   * Hash look-ups since the nodes' chains or the set last changed (cleared at every head, every recount, every change
   * of the set): a cached answer is checked against them at every hit, and a scan of every node's recent chain per
   * hit cost more than the rest of the hit. Reachability is not an event: it is seen at the next recount.
   */
  private readonly hashLookups = new Map<string, HashLookup>();

  constructor(private readonly options: NetworkUpstreamsOptions) {
    super();
    this.tags = new AgreedTags({
      sources: () => this.tagSources(),
      timeoutMs: options.timeoutMs,
      logger: options.logger,
      minIntervalMs: options.tagsMinIntervalMs ?? TAGS_MIN_INTERVAL_MS,
    });
    this.followers = new NodeFollowers((node) => this.follow(node));
    this.unsubscribe = options.source.onChange((network) => {
      if (network === options.network) this.sync();
    });
    // The upstreams first: a reserved peer without a ws URL then shares the follower of an upstream at its URL that
    // has one.
    this.sync();
    for (const config of options.peers ?? []) {
      const follower = this.followers.acquire(config);
      // A node that is also an upstream recounts from the upstream's listener, with its header.
      follower.on("head", () => {
        if (!this.followedAsUpstream(follower)) this.updateAgreement(undefined, undefined);
      });
      this.peers.push({ config, follower });
    }
    this.updateAgreement(undefined, undefined);
    this.recount = setInterval(() => {
      this.followers.pollIfSilent();
      if (this.followers.revision() !== this.countedRevision) this.updateAgreement(undefined, undefined);
      // Asked again until known, not only at the next head (a chain that stands still would never have them), but
      // seldom: a chain without finality (pre-merge, some devnets) never answers.
      const now = Date.now();
      if (
        this.served !== undefined &&
        (!this.tags.safe() || !this.tags.finalized()) &&
        now - this.tagsRetriedAt >= TAGS_RETRY_MS
      ) {
        this.tagsRetriedAt = now;
        void this.tags.refresh();
      }
    }, options.pollIntervalMs);
    this.recount.unref();
  }

  get network(): string {
    return this.options.network;
  }

  /** The network's chain id; a node that reports another is never used. */
  get chainId(): number {
    return this.options.chainId;
  }

  /** Re-reads the source: starts following new upstreams, stops following departed ones. */
  sync(): void {
    const current = new Map(this.options.source.upstreams(this.options.network).map((u) => [u.name, u]));
    for (const [name, member] of this.members) {
      const next = current.get(name);
      if (!next || next.httpUrl !== member.upstream.httpUrl || next.wsUrl !== member.upstream.wsUrl) {
        member.stopListening();
        this.followers.release(member.follower);
        // Calls in flight are answered first: one that changes state (a transaction) must not be cut off.
        member.calls?.closeWhenIdle();
        this.members.delete(name);
      }
    }
    for (const [name, upstream] of current) {
      const member = this.members.get(name);
      if (member) {
        member.upstream = upstream;
        continue;
      }
      const follower = this.followers.acquire({
        name,
        http: upstream.httpUrl,
        ...(upstream.wsUrl ? { ws: upstream.wsUrl } : {}),
      });
      const onHead = (_head: BlockRef, header: unknown) => this.onHead(added, header);
      const added: Member = {
        upstream,
        follower,
        stopListening: () => follower.off("head", onHead),
        calls: this.callsTo(upstream),
        outstanding: 0,
      };
      follower.on("head", onHead);
      this.members.set(name, added);
    }
    this.updateAgreement(undefined, undefined);
    this.emit("change");
  }

  candidates(): Candidate[] {
    return [...this.members.values()].map((m) => {
      const observation = m.follower.observation(m.upstream.name);
      return {
        name: m.upstream.name,
        routed: m.upstream.routed && !this.agreement.dissenters.has(m.upstream.name),
        reachable: observation.reachable && observation.chainId === this.options.chainId,
        head: observation.head?.number,
        outstanding: m.outstanding,
      };
    });
  }

  servedHead(): number | undefined {
    return this.served;
  }

  /**
   * The finalized block the reserved peers agree on (the routed nodes, without usable peers): what `finalized` means
   * in a call; it may be above the served head while the served head lags. Undefined until agreed.
   */
  finalized(): BlockRef | undefined {
    return this.tags.finalized();
  }

  /** The safe block, agreed as the finalized one is. */
  safe(): BlockRef | undefined {
    return this.tags.safe();
  }

  /**
   * Where a recent block hash is: its height and the nodes whose recent canonical chain holds it (newHeads history,
   * 128 blocks deep); undefined for a hash none of them has seen recently (older, or on no node's chain).
   */
  blockOfHash(hash: string): { number: number; holders: Set<string> } | undefined {
    return this.lookUp(hash).block;
  }

  /**
   * The height of a recent block hash that a node serving now holds on its chain (a routed node's; any reachable
   * node's in panic mode): while it does, an answer about that block is still the chain's.
   */
  servedHeightOfHash(hash: string): number | undefined {
    const lookup = this.lookUp(hash);
    if (lookup.served === null) {
      const known = lookup.block;
      let served: number | undefined;
      if (known) {
        const candidates = this.candidates();
        const routed = candidates.filter((c) => c.routed && c.reachable);
        const serving = routed.length > 0 ? routed : candidates;
        served = serving.some((c) => known.holders.has(c.name)) ? known.number : undefined;
      }
      lookup.served = served;
    }
    return lookup.served;
  }

  private lookUp(hash: string): HashLookup {
    let lookup = this.hashLookups.get(hash);
    if (!lookup) {
      // Bounded: a client asking for made-up hashes only empties it.
      if (this.hashLookups.size >= MAX_HASH_LOOKUPS) this.hashLookups.clear();
      lookup = { block: this.scanForHash(hash), served: null };
      this.hashLookups.set(hash, lookup);
    }
    return lookup;
  }

  private scanForHash(hash: string): { number: number; holders: Set<string> } | undefined {
    let number: number | undefined;
    const holders = new Set<string>();
    for (const member of this.members.values()) {
      const observation = member.follower.observation(member.upstream.name);
      const head = observation.head;
      // The newest head is checked first: the block asked for is most often the one just announced.
      let height = head?.hash === hash ? head.number : undefined;
      if (height === undefined)
        for (const [h, known] of observation.recentHashes ?? []) {
          if (known === hash) {
            height = h;
            break;
          }
        }
      if (height === undefined) continue;
      number = height;
      holders.add(member.upstream.name);
    }
    return number === undefined ? undefined : { number, holders };
  }

  panic(): boolean {
    return this.members.size > 0 && inPanic(this.candidates());
  }

  url(name: string): string | undefined {
    return this.members.get(name)?.upstream.httpUrl;
  }

  /** How many nodes' calls WebSockets are open. */
  openCallSockets(): number {
    let open = 0;
    for (const member of this.members.values()) if (member.calls?.connected) open++;
    return open;
  }

  /**
   * Sends one call to a node (see `forward` for `raw` and the errors): over its WebSocket when that is open, else over
   * HTTP. Its answer goes to `sink`, never in this turn. False when the node has left the set (`sink` is not called).
   */
  call(name: string, request: JsonRpcRequest, timeoutMs: number, raw: boolean, sink: ResponseSink): boolean {
    const member = this.members.get(name);
    if (!member) return false;
    const ws = member.calls;
    const { httpUrl } = member.upstream;
    if (
      ws?.connected &&
      ws.backlog <= MAX_CALL_BACKLOG_BYTES &&
      overWebSocket(request.method) &&
      ws.callInto(
        request.method,
        request.params,
        timeoutMs,
        new WsCallAnswer(request, raw, timeoutMs, httpUrl, sink),
      )
    )
      return true;
    forward(httpUrl, request, timeoutMs, raw).then(
      (response) => sink.answered(response),
      (error: unknown) => sink.failed(error),
    );
    return true;
  }

  /** Counts a request in flight on a node (for least-outstanding balancing); call the returned function when done. */
  acquire(name: string): () => void {
    const member = this.members.get(name);
    if (!member) return () => {};
    member.outstanding++;
    return () => {
      member.outstanding--;
    };
  }

  async close(): Promise<void> {
    clearInterval(this.recount);
    this.tags.close();
    this.unsubscribe();
    this.followers.stopAll();
    for (const member of this.members.values()) member.calls?.close();
    this.members.clear();
  }

  /** Whether an upstream follows the node with this follower (then its listener recounts at the node's heads). */
  private followedAsUpstream(follower: PeerFollower): boolean {
    for (const member of this.members.values()) if (member.follower === follower) return true;
    return false;
  }

  private follow(peer: PeerConfig): PeerFollower {
    return new PeerFollower({
      network: this.options.network,
      peer,
      expectedChainId: this.options.chainId,
      pollIntervalMs: this.options.pollIntervalMs,
      timeoutMs: this.options.timeoutMs,
      logger: this.options.logger,
      historyDepth: 128,
      ownTimer: false,
    });
  }

  private callsTo(upstream: Upstream): WsRpcClient | undefined {
    if (!upstream.wsUrl) return undefined;
    const calls = new WsRpcClient({
      url: upstream.wsUrl,
      timeoutMs: this.options.timeoutMs,
      // A connection the node no longer answers is dropped and made again, so its calls fail over quickly.
      pingIntervalMs: CALLS_PING_MS,
    });
    const log = this.options.logger.child({ network: this.options.network, upstream: upstream.name });
    calls.on("open", () => log.debug("gateway: calls over WebSocket"));
    calls.on("close", (reason: string) =>
      log.debug({ reason }, "gateway: calls over HTTP until the WebSocket is back"),
    );
    calls.on("error", (error: Error) => log.debug({ err: error.message }, "gateway: calls WebSocket failed"));
    calls.connect();
    return calls;
  }

  private onHead(member: Member, header: unknown): void {
    if (this.members.get(member.upstream.name) !== member) return;
    this.updateAgreement(member, header);
    // Calls waiting for a node to have a block try again (a node reaching an agreed block moves no agreement).
    this.emit("nodeHead", member.upstream.name);
  }

  /**
   * Recounts what the nodes agree on after a head or a routing change; announces a new agreed head (with the header
   * of the node that just reported it, when that is the agreed block) and a new served head.
   */
  private updateAgreement(reporter: Member | undefined, header: unknown): void {
    this.countedRevision = this.followers.revision();
    this.hashLookups.clear();
    const previous = this.agreement.head;
    const served = this.served;
    this.agreement = agreeOnHead(this.voters(), this.usablePeers());
    const agreed = this.agreement.head;
    if (agreed !== undefined) this.served = Math.max(this.served ?? agreed.number, agreed.number);
    if (agreed !== undefined && (agreed.number !== previous?.number || agreed.hash !== previous.hash)) {
      const own = reporter && reporter.follower.observation().head?.hash === agreed.hash;
      const from = own ? reporter.upstream.name : this.agreement.supporters[0]!;
      this.emit("head", from, agreed, own ? header : undefined);
      void this.tags.refresh();
    }
    if (this.served !== served) this.emit("change");
  }

  /** Who says which blocks are safe and finalized: the usable reserved peers, else the voting nodes. */
  private tagSources(): TagSource[] {
    const peers: TagSource[] = [];
    for (const peer of this.peers) {
      const observation = peer.follower.observation(peer.config.name);
      if (observation.reachable && observation.chainId === this.options.chainId && observation.head)
        peers.push({ name: peer.config.name, httpUrl: peer.config.http });
    }
    if (peers.length > 0) return peers;
    const voters = new Set(this.voters().map((v) => v.name));
    return [...this.members.values()]
      .filter((m) => voters.has(m.upstream.name))
      .map((m) => ({ name: m.upstream.name, httpUrl: m.upstream.httpUrl }));
  }

  private usablePeers(): PeerObservation[] {
    const usable: PeerObservation[] = [];
    for (const peer of this.peers) {
      const observation = peer.follower.observation(peer.config.name);
      if (observation.reachable && observation.chainId === this.options.chainId && observation.head)
        usable.push(observation);
    }
    return usable;
  }

  /** The nodes whose blocks count: the routed ones with a head on the right chain, or every such node in panic. */
  private voters(): PeerObservation[] {
    const usable: Array<{ routed: boolean; observation: PeerObservation }> = [];
    for (const m of this.members.values()) {
      const observation = m.follower.observation(m.upstream.name);
      if (!observation.reachable || observation.chainId !== this.options.chainId || !observation.head)
        continue;
      usable.push({ routed: m.upstream.routed, observation });
    }
    const routed = usable.filter((u) => u.routed);
    return (routed.length > 0 ? routed : usable).map((u) => u.observation);
  }
}
