import type { PeerConfig } from "../../config/sections/network.js";
import type { PeerFollower } from "../../probe/peerFollower.js";

interface Entry {
  follower: PeerFollower;
  http: string;
  ws: string | undefined;
  users: number;
}

/**
 * One follower per node of a network, shared by the roles the node has there: a reserved peer and an upstream at the
 * same URL (often so: a node both counted as a peer and served from). Both roles read the same facts of it (head,
 * recent hashes, chain id, reachability), so following it once halves its polls while its newHeads is silent, and a
 * peer configured without a ws URL is then followed over the upstream's WebSocket instead of polled over HTTP.
 *
 * A node is known by its HTTP URL. A role without a ws URL shares a follower that has one; a role with a ws URL shares
 * only a follower with the same one (one without would cost the role its newHeads), else it gets its own.
 */
export class NodeFollowers {
  private readonly entries: Entry[] = [];

  constructor(private readonly create: (node: PeerConfig) => PeerFollower) {}

  /** The node's follower, started; `release` it when the role ends. */
  acquire(node: PeerConfig): PeerFollower {
    let shared: Entry | undefined;
    for (const entry of this.entries) {
      if (entry.http !== node.http) continue;
      if (node.ws !== undefined ? entry.ws === node.ws : !shared || (entry.ws && !shared.ws)) shared = entry;
    }
    if (shared) {
      shared.users++;
      return shared.follower;
    }
    const follower = this.create(node);
    this.entries.push({ follower, http: node.http, ws: node.ws, users: 1 });
    follower.start();
    return follower;
  }

  /** Ends one role's use of a follower: stopped once no role uses it. */
  release(follower: PeerFollower): void {
    const i = this.entries.findIndex((e) => e.follower === follower);
    if (i < 0) return;
    const entry = this.entries[i]!;
    if (--entry.users > 0) return;
    this.entries.splice(i, 1);
    follower.stop();
  }

  /** Polls every node whose newHeads is silent, once however many roles share it. */
  pollIfSilent(): void {
    for (const entry of this.entries) entry.follower.pollIfSilent();
  }

  /**
   * The sum of the followers' revisions: it grows whenever what any of them says of its node's chain may have changed
   * (each one's only grows), so an unchanged sum means nothing to recount. Comparable only while the set stays.
   */
  revision(): number {
    let sum = 0;
    for (const entry of this.entries) sum += entry.follower.revision();
    return sum;
  }

  /** How many nodes are followed. */
  get size(): number {
    return this.entries.length;
  }

  stopAll(): void {
    for (const entry of this.entries.splice(0)) entry.follower.stop();
  }
}
