import { startAdminServer } from "../admin/adminServer.js";
import type { AdminServer, AdminServerOptions } from "../admin/adminServer.js";
import type { Config } from "../config/schema.js";
import type { Logger } from "../log/logger.js";
import type { GatewayFlags } from "./gatewayProcess.js";
import { slicesFresh } from "./gatewayProcess.js";
import { GracefulShutdown } from "./gracefulShutdown.js";

/** What the admin port and the shutdown need of the serving side: one gateway process, or the workers' primary. */
export interface ServingSide {
  /** What `/metrics` serves: this process's registry, or the sum over the workers. */
  registry: AdminServerOptions["registry"];
  /** The gateway's part of `/readyz`: every network has a served head (in every worker). */
  ready(): { ok: boolean; message?: string };
  /** The oldest EndpointSlice cache sync, when some network follows a Service: the `/healthz` check. */
  slicesSynced?: () => number | undefined;
  /** The first signal: answers from now on tell kept-alive clients to reconnect. */
  drain(): void;
  /** Logged once serving. */
  describe: Record<string, unknown>;
}

/**
 * The admin port (metrics, liveness, readiness) and the graceful shutdown, set up the same way for one process and for
 * the workers' primary: resolves once a signal has come and the shutdown delay has passed, with the admin server to
 * close after the gateway has stopped.
 */
export async function serveUntilStopping(
  config: Config,
  logger: Logger,
  flags: GatewayFlags,
  side: ServingSide,
): Promise<AdminServer> {
  const admin = await startAdminServer({
    host: config.admin.host,
    port: flags.adminPort ?? config.admin.port,
    registry: side.registry,
    logger,
  });
  const synced = side.slicesSynced;
  if (synced) admin.addLiveness({ name: "endpointslices", check: () => slicesFresh(synced()) });
  admin.addReadiness({ name: "gateway", check: () => side.ready() });
  const shutdown = new GracefulShutdown(config.gateway.shutdownDelay, logger);
  admin.addReadiness(shutdown.readiness);
  logger.info({ ...side.describe, admin: admin.url }, "gateway serving");
  await shutdown.untilStopping(() => side.drain());
  return admin;
}
