import { startGateway } from "../gateway/gateway.js";
import { networksWithoutHead } from "../gateway/gatewayProcess.js";
import { FleetUpstreamSource } from "../gateway/upstreams/fleetSource.js";
import type { UpComponent } from "./component.js";
import { DevnetFrontSource } from "./devnetFrontSource.js";
import { withDevnetPeers } from "./devnetPeers.js";

/** The public RPC gateway in front of the process fleet: routed members only, panic mode when none is routed. */
export const gatewayComponent: UpComponent = {
  name: "gateway",
  async start(context) {
    const { config, devnet, fleet, logger, registry, flags } = context;
    if (!fleet) throw new Error("the gateway needs the process fleet");
    if (!config.networks.some((n) => n.nodes !== undefined)) return undefined;
    const gateway = await startGateway({
      // Served blocks are checked against the reserved peers: with a devnet, its full nodes.
      config: { ...config, networks: withDevnetPeers(config.networks, devnet) },
      // With latency fronts, through the devnet's front of each node (where `devnet slow` delays state reads).
      source: devnet
        ? new DevnetFrontSource(new FleetUpstreamSource(fleet), devnet)
        : new FleetUpstreamSource(fleet),
      logger,
      registry,
      ...(flags.port !== undefined ? { port: flags.port } : {}),
    });
    context.gateway = gateway;
    const ws = gateway.url.replace(/^http/, "ws");
    const endpoints = config.networks.flatMap((network) => {
      const path = network.gateway.path ?? `/${network.name}`;
      const isDefault = network.gateway.default || config.networks.length === 1;
      return [
        ...(isDefault
          ? [
              { label: `${network.name} RPC`, url: `${gateway.url}/` },
              { label: `${network.name} WebSocket`, url: `${ws}/ws` },
            ]
          : []),
        { label: `${network.name} RPC`, url: `${gateway.url}${path}` },
        { label: `${network.name} WebSocket`, url: `${ws}${path}/ws` },
      ];
    });
    return {
      endpoints,
      // Ready once it serves a head for every network (so it has a routed, or at least responsive, node).
      ready: () => {
        const missing = networksWithoutHead(config, (n) => gateway.servedHead(n));
        return missing.length === 0
          ? { ok: true }
          : { ok: false, message: `no head yet for ${missing.join(", ")}` };
      },
      stop: () => gateway.stop(),
    };
  },
};
