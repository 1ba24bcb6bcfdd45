import type { Fleet } from "../fleet/fleet.js";
import type { Decision, RestartReason } from "../health/types.js";
import type { Logger } from "../log/logger.js";
import type { ControllerMetrics } from "../metrics/controllerMetrics.js";

export interface CarryOutOptions {
  network: string;
  fleet: Fleet;
  logger: Logger;
  metrics?: ControllerMetrics;
  /** Members whose restart call is under way; the caller reads it to mark them Restarting. */
  restarting: Set<string>;
  /** Receives each background restart, so that stopping the controller can wait for them. */
  track?: (restart: Promise<void>) => void;
}

/**
 * Carries out one round's decisions on the fleet. Routing changes are awaited (the next round compares against the
 * fleet's routing again, so a failed call is simply re-decided). Restarts run in the background: a stop and respawn
 * can take longer than a probe interval, and the member shows as restarting meanwhile. A `deferred` restart is left
 * to the engine, which asks for it again after its backoff.
 */
export async function carryOutDecisions(
  decisions: ReadonlyArray<Decision>,
  options: CarryOutOptions,
): Promise<void> {
  const { network, fleet, logger } = options;
  const routing: Array<Promise<void>> = [];
  for (const decision of decisions) {
    if (decision.kind === "route" || decision.kind === "unroute") {
      const routed = decision.kind === "route";
      routing.push(
        fleet.setRouted(network, decision.node, routed).then(
          () =>
            logger.info({ network, node: decision.node, routed }, routed ? "node routed" : "node unrouted"),
          (error: unknown) =>
            logger.error({ network, node: decision.node, err: messageOf(error) }, "routing change failed"),
        ),
      );
    } else if (decision.kind === "restart") {
      restartMember(decision.node, decision.reason, options);
    }
  }
  await Promise.all(routing);
}

/**
 * Restarts one member in the background (the engine's decision, or an operator's request), unless its restart is
 * already under way. `options.restarting` holds it from this call on, so the round that follows sees it in flight.
 */
export function restartMember(node: string, reason: RestartReason, options: CarryOutOptions): void {
  options.track?.(restart(node, reason, options));
}

async function restart(node: string, reason: RestartReason, options: CarryOutOptions): Promise<void> {
  const { network, fleet, logger, restarting } = options;
  if (restarting.has(node)) return;
  restarting.add(node);
  try {
    logger.info({ network, node, reason }, "restarting node");
    const result = await fleet.restart(network, node, reason);
    if (result.outcome === "restarted") options.metrics?.recordRestart(network, reason);
    else if (result.outcome === "deferred")
      logger.warn(
        { network, node, reason, why: result.message },
        "restart deferred; it will be asked for again",
      );
    else logger.info({ network, node }, "node to restart is gone");
  } catch (error) {
    logger.error({ network, node, reason, err: messageOf(error) }, "restart failed");
  } finally {
    restarting.delete(node);
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
