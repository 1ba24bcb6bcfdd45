import type { Devnet } from "../devnet/devnet.js";
import type { Upstream, UpstreamSource } from "../gateway/upstreams/upstreamSource.js";

/**
 * The fleet's light nodes as the gateway of `up` reaches them when the devnet runs latency fronts: through each
 * node's front (where `devnet slow` takes effect), else directly. Read at every look-up: a restarted node gets a new
 * front when the devnet attaches it again.
 */
export class DevnetFrontSource implements UpstreamSource {
  constructor(
    private readonly inner: UpstreamSource,
    private readonly devnet: Devnet,
  ) {}

  upstreams(network: string): Upstream[] {
    const upstreams = this.inner.upstreams(network);
    if (!this.devnet.status().networks.some((n) => n.name === network)) return upstreams;
    const fronts = new Map(this.devnet.nodes(network).map((node) => [node.name, node]));
    return upstreams.map((upstream) => {
      const front = fronts.get(upstream.name);
      return front && front.httpUrl !== upstream.httpUrl
        ? { ...upstream, httpUrl: front.httpUrl, wsUrl: front.wsUrl }
        : upstream;
    });
  }

  onChange(listener: (network: string) => void): () => void {
    return this.inner.onChange(listener);
  }
}
