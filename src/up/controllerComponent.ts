import { Controller } from "../controller/controller.js";
import { createControllerMetrics } from "../metrics/controllerMetrics.js";
import { createProbeMetrics } from "../metrics/probeMetrics.js";
import type { UpComponent } from "./component.js";
import { withDevnetPeers } from "./devnetPeers.js";
import { nodeAdminRouter } from "./nodeRoutes.js";

/**
 * The health controller over the process fleet. With a devnet, the devnet's full nodes are the reserved peers of the
 * networks it runs (withDevnetPeers).
 */
export const controllerComponent: UpComponent = {
  name: "controller",
  async start(context) {
    const { config, devnet, fleet, logger, registry, admin } = context;
    if (!fleet) throw new Error("the controller needs the process fleet");
    const networks = withDevnetPeers(config.networks, devnet);
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
