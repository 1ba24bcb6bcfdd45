import type { Upstream, UpstreamSource } from "./upstreamSource.js";

/** A fixed list of upstreams per network (config `networks[].gateway.upstreams`), all routed. */
export class StaticUpstreamSource implements UpstreamSource {
  private readonly byNetwork = new Map<string, Upstream[]>();
  private readonly listeners = new Set<(network: string) => void>();

  constructor(upstreams: Upstream[]) {
    for (const upstream of upstreams) {
      const list = this.byNetwork.get(upstream.network) ?? [];
      list.push(upstream);
      this.byNetwork.set(upstream.network, list);
    }
  }

  upstreams(network: string): Upstream[] {
    return this.byNetwork.get(network) ?? [];
  }

  /** Changes whether an upstream is routed (tests, and operators draining a node by hand). */
  setRouted(network: string, name: string, routed: boolean): void {
    const upstream = this.upstreams(network).find((u) => u.name === name);
    if (!upstream || upstream.routed === routed) return;
    upstream.routed = routed;
    for (const listener of this.listeners) listener(network);
  }

  onChange(listener: (network: string) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
