import { Controller } from "../controller/controller.js";
import { createControllerMetrics } from "../metrics/controllerMetrics.js";
import { createProbeMetrics } from "../metrics/probeMetrics.js";
import type { UpComponent } from "./component.js";
import { nodeAdminRouter } from "./nodeRoutes.js";

/**
 * The health controller over the process fleet. With a devnet, each network the devnet runs takes the devnet's full
 * nodes as its reserved peers (whatever the file lists), since those are the nodes the light nodes follow.
 */
export const controllerComponent: UpComponent = {
  name: "controller",
  async start(context) {
    const { config, devnet, fleet, logger, registry, admin } = context;
    if (!fleet) throw new Error("the controller needs the process fleet");
    const devnetNetworks = new Set(devnet?.status().networks.map((n) => n.name) ?? []);
    const networks = config.networks.map((network) => {
      if (!devnet || !devnetNetworks.has(network.name)) return network;
      const reservedPeers = devnet
        .nodes(network.name)
        .filter((node) => node.role === "full")
        .map((node) => ({ name: node.name, http: node.httpUrl, ws: node.wsUrl }));
      return { ...network, reservedPeers };
    });
    const controller = new Controller({
      networks,
      fleet,
      logger,
      metrics: createControllerMetrics(registry),
      probeMetrics: createProbeMetrics(registry),
    });
    context.controller = controller;
    admin.addRoutes(nodeAdminRouter(fleet));
    controller.start();
    // Ready once every network completed a round.
    return { ready: controller.readinessCheck().check, stop: () => controller.stop() };
  },
};
