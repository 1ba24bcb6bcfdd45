import type { Upstream, UpstreamSource } from "../../gateway/upstreams/upstreamSource.js";

/** Upstreams as another process last sent them (a replica of `up` hears its fleet's over IPC). */
export class SnapshotUpstreamSource implements UpstreamSource {
  private readonly byNetwork = new Map<string, Upstream[]>();
  private readonly listeners = new Set<(network: string) => void>();

  upstreams(network: string): Upstream[] {
    return this.byNetwork.get(network) ?? [];
  }

  /** Replaces a network's list and tells the gateway to read it again. */
  set(network: string, upstreams: Upstream[]): void {
    this.byNetwork.set(network, upstreams);
    for (const listener of this.listeners) listener(network);
  }

  onChange(listener: (network: string) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
