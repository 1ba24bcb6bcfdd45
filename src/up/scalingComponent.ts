import { createScalingMetrics } from "../metrics/scalingMetrics.js";
import { createRateSources } from "../scaling/createRateSources.js";
import { Scaler } from "../scaling/scaler.js";
import type { UpComponent } from "./component.js";

/**
 * The autoscaler over the process fleet: after every controller round of a network with light nodes, reads the
 * request rate (the in-process gateway's counters, or Prometheus) and resizes the pool. A resize runs beside the
 * health rounds, one at a time per network, so starting nodes never delays probing.
 */
export const scalingComponent: UpComponent = {
  name: "autoscaler",
  async start(context) {
    const { config, fleet, controller, logger, registry } = context;
    if (!fleet || !controller) throw new Error("the autoscaler needs the process fleet and the controller");
    const networks = config.networks.filter((n) => n.nodes !== undefined);
    if (networks.length === 0) return undefined;
    const clock = Date.now;
    const scaler = new Scaler({
      networks,
      fleet,
      source: createRateSources({ clock, ...(context.gateway ? { gateway: context.gateway } : {}) }),
      clock,
      logger: logger.child({ component: "autoscaler" }),
      metrics: createScalingMetrics(registry),
    });
    const scaled = new Set(networks.map((n) => n.name));
    const unsubscribe = controller.onRound((network, output) => {
      if (!scaled.has(network)) return;
      void scaler.roundBeside(network, output, (error) =>
        logger.error({ network, err: (error as Error).message }, "autoscaler round failed"),
      );
    });
    const stopFloors = scaler.scheduleCronFloors(() => void controller.runRound());
    context.scaler = scaler;
    return {
      async stop() {
        unsubscribe();
        stopFloors();
        await scaler.settled();
      },
    };
  },
};
