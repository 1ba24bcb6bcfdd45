import { EventEmitter } from "node:events";
import type { BlockRef } from "../../health/types.js";
import type { Logger } from "../../log/logger.js";
import { PeerFollower } from "../../probe/peerFollower.js";
import type { Candidate } from "./balancer.js";
import { inPanic, nextServedHead } from "./balancer.js";
import type { Upstream, UpstreamSource } from "./upstreamSource.js";

interface Member {
  upstream: Upstream;
  follower: PeerFollower;
  outstanding: number;
}

export interface NetworkUpstreamsOptions {
  network: string;
  chainId: number;
  source: UpstreamSource;
  /** Head polling period when a node's newHeads subscription is down. */
  pollIntervalMs: number;
  timeoutMs: number;
  logger: Logger;
}

/**
 * The upstreams of one network as the gateway uses them: each followed by newHeads (HTTP polling as fallback, chain
 * id checked), with its outstanding request count. Emits `head` (upstream name, BlockRef, the node's header) for heads
 * of nodes that may serve (routed, or any in panic), and `change` when the set or the served head moves.
 */
export class NetworkUpstreams extends EventEmitter {
  private readonly members = new Map<string, Member>();
  private served: number | undefined;
  private readonly unsubscribe: () => void;

  constructor(private readonly options: NetworkUpstreamsOptions) {
    super();
    this.unsubscribe = options.source.onChange((network) => {
      if (network === options.network) this.sync();
    });
    this.sync();
  }

  get network(): string {
    return this.options.network;
  }

  /** Re-reads the source: starts following new upstreams, stops following departed ones. */
  sync(): void {
    const current = new Map(this.options.source.upstreams(this.options.network).map((u) => [u.name, u]));
    for (const [name, member] of this.members) {
      const next = current.get(name);
      if (!next || next.httpUrl !== member.upstream.httpUrl) {
        member.follower.stop();
        this.members.delete(name);
      }
    }
    for (const [name, upstream] of current) {
      const member = this.members.get(name);
      if (member) {
        member.upstream = upstream;
        continue;
      }
      const follower = new PeerFollower({
        network: this.options.network,
        peer: { name, http: upstream.httpUrl, ...(upstream.wsUrl ? { ws: upstream.wsUrl } : {}) },
        expectedChainId: this.options.chainId,
        pollIntervalMs: this.options.pollIntervalMs,
        timeoutMs: this.options.timeoutMs,
        logger: this.options.logger,
        historyDepth: 128,
      });
      const added: Member = { upstream, follower, outstanding: 0 };
      follower.on("head", (head: BlockRef, header: unknown) => this.onHead(added, head, header));
      this.members.set(name, added);
      follower.start();
    }
    this.updateServed();
    this.emit("change");
  }

  candidates(): Candidate[] {
    return [...this.members.values()].map((m) => {
      const observation = m.follower.observation();
      return {
        name: m.upstream.name,
        routed: m.upstream.routed,
        reachable: observation.reachable && observation.chainId === this.options.chainId,
        head: observation.head?.number,
        outstanding: m.outstanding,
      };
    });
  }

  servedHead(): number | undefined {
    return this.served;
  }

  panic(): boolean {
    return this.members.size > 0 && inPanic(this.candidates());
  }

  url(name: string): string | undefined {
    return this.members.get(name)?.upstream.httpUrl;
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
    this.unsubscribe();
    for (const member of this.members.values()) member.follower.stop();
    this.members.clear();
  }

  private onHead(member: Member, head: BlockRef, header: unknown): void {
    if (this.members.get(member.upstream.name) !== member) return;
    const previous = this.served;
    this.updateServed();
    const candidates = this.candidates();
    const mayServe = member.upstream.routed || inPanic(candidates);
    if (mayServe) this.emit("head", member.upstream.name, head, header);
    if (this.served !== previous) this.emit("change");
  }

  private updateServed(): void {
    this.served = nextServedHead(this.served, this.candidates());
  }
}
