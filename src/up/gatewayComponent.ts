import { startGateway } from "../gateway/gateway.js";
import { networksWithoutHead } from "../gateway/gatewayProcess.js";
import { FleetUpstreamSource } from "../gateway/upstreams/fleetSource.js";
import type { UpComponent } from "./component.js";
import { DevnetFrontSource } from "./devnetFrontSource.js";
import { withDevnetPeers } from "./devnetPeers.js";
import { gatewayEndpoints } from "./gatewayEndpoints.js";
import { startGatewayReplicas } from "./gatewayReplicas/startReplicas.js";

/**
 * The public RPC gateway in front of the process fleet: routed members only, panic mode when none is routed. With
 * `gateway.replicas` above 1, that many gateway processes behind one front address, sharing their state in Redis.
 */
export const gatewayComponent: UpComponent = {
  name: "gateway",
  async start(context) {
    const { config, devnet, fleet, logger, registry, flags } = context;
    if (!fleet) throw new Error("the gateway needs the process fleet");
    if (!config.networks.some((n) => n.nodes !== undefined)) return undefined;
    // Served blocks are checked against the reserved peers: with a devnet, its full nodes.
    const served = { ...config, networks: withDevnetPeers(config.networks, devnet) };
    // With latency fronts, through the devnet's front of each node (where `devnet slow` delays state reads).
    const source = devnet
      ? new DevnetFrontSource(new FleetUpstreamSource(fleet), devnet)
      : new FleetUpstreamSource(fleet);
    if (config.gateway.replicas > 1) return startGatewayReplicas(context, served, source);
    const gateway = await startGateway({
      config: served,
      source,
      logger,
      registry,
      ...(flags.port !== undefined ? { port: flags.port } : {}),
    });
    context.gateway = gateway;
    return {
      endpoints: gatewayEndpoints(config, gateway.url),
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
