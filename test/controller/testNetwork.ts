import { networkSchema, type NetworkConfig } from "../../src/config/sections/network.js";

/** A network config for controller tests: short intervals, peers from running anvil nodes. */
export function testNetwork(
  name: string,
  peers: ReadonlyArray<{ httpUrl: string; wsUrl: string }>,
  health: Record<string, unknown> = {},
  options: { chainId?: number; blockTime?: string; ws?: boolean } = {},
): NetworkConfig {
  return networkSchema.parse({
    name,
    chainId: options.chainId ?? 31_337,
    blockTime: options.blockTime ?? "300ms",
    reservedPeers: peers.map((p, i) => ({
      name: `full-${i}`,
      http: p.httpUrl,
      ...(options.ws === false ? {} : { ws: p.wsUrl }),
    })),
    health: {
      probeInterval: "150ms",
      probeTimeout: "1s",
      unhealthyAfter: 2,
      healthyAfter: 2,
      restartAfter: "1s",
      restartBackoffBase: "1s",
      startupGrace: "10s",
      stallAfter: "2s",
      ...health,
    },
  });
}
