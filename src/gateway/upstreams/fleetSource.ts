import type { Fleet } from "../../fleet/fleet.js";
import type { Upstream, UpstreamSource } from "./upstreamSource.js";

/** Upstreams from a Fleet backend: every member, routed as the controller decided. */
export class FleetUpstreamSource implements UpstreamSource {
  constructor(private readonly fleet: Fleet) {}

  upstreams(network: string): Upstream[] {
    return this.fleet.members(network).map((member) => ({
      name: member.name,
      network,
      httpUrl: member.httpUrl,
      ...(member.wsUrl ? { wsUrl: member.wsUrl } : {}),
      routed: member.routed && !member.restarting,
    }));
  }

  onChange(listener: (network: string) => void): () => void {
    return this.fleet.onChange(listener);
  }
}
