import type { NetworkConfig } from "../config/sections/network.js";
import type { Devnet } from "../devnet/devnet.js";

/**
 * Each network the devnet runs takes the devnet's full nodes as its reserved peers (whatever the file lists), since
 * those are the nodes the light nodes follow: the controller's reference and the gateway's check of served blocks.
 */
export function withDevnetPeers(networks: NetworkConfig[], devnet: Devnet | undefined): NetworkConfig[] {
  const devnetNetworks = new Set(devnet?.status().networks.map((n) => n.name) ?? []);
  return networks.map((network) => {
    if (!devnet || !devnetNetworks.has(network.name)) return network;
    const reservedPeers = devnet
      .nodes(network.name)
      .filter((node) => node.role === "full")
      .map((node) => ({ name: node.name, http: node.httpUrl, ws: node.wsUrl }));
    return { ...network, reservedPeers };
  });
}
