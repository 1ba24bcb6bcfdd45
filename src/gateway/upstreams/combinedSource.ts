import type { Upstream, UpstreamSource } from "./upstreamSource.js";

/** Several sources as one (a static list for some networks, EndpointSlices for others): upstreams are concatenated. */
export class CombinedUpstreamSource implements UpstreamSource {
  constructor(private readonly sources: readonly UpstreamSource[]) {}

  upstreams(network: string): Upstream[] {
    return this.sources.flatMap((source) => source.upstreams(network));
  }

  onChange(listener: (network: string) => void): () => void {
    const unsubscribe = this.sources.map((source) => source.onChange(listener));
    return () => {
      for (const u of unsubscribe) u();
    };
  }

  async close(): Promise<void> {
    await Promise.all(this.sources.map((source) => source.close?.()));
  }
}
