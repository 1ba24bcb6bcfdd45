import { resolve } from "node:path";
import { startAdminServer, type AdminServer } from "../admin/adminServer.js";
import { loadConfig } from "../config/loadConfig.js";
import type { LogConfig } from "../config/sections/log.js";
import { createLogger, type Logger } from "../log/logger.js";
import { createRegistry } from "../metrics/registry.js";
import { formatBanner } from "./banner.js";
import type { Endpoint, RunningComponent, UpComponent, UpContext, UpFlags } from "./component.js";
import { UP_COMPONENTS } from "./components.js";
import { FleetView } from "./fleetView.js";

export interface RunUpOptions extends UpFlags {
  config: string;
  logFormat?: LogConfig["format"];
  /** Defaults to UP_COMPONENTS. */
  components?: ReadonlyArray<UpComponent>;
  stdout?: NodeJS.WriteStream;
}

export interface RunningUp {
  context: UpContext;
  endpoints: Endpoint[];
  /** Stops every component in reverse start order, then the admin server. */
  stop(): Promise<void>;
}

/**
 * Starts the single-host system: the admin server, then every component in order. If one fails to start, those
 * already started are stopped again and the error is thrown.
 */
export async function startUp(options: RunUpOptions): Promise<RunningUp> {
  const configFile = resolve(options.config);
  const config = await loadConfig(configFile);
  const stdout = options.stdout ?? process.stdout;
  const format = options.logFormat ?? config.log.format;
  const view = format === "auto" && stdout.isTTY === true;
  // On a terminal the fleet view tells the story; the log keeps to warnings unless asked for more.
  const level = view && config.log.level === "info" ? "warn" : config.log.level;
  const logger = createLogger({ format, level }, view ? process.stderr : stdout, { singleLine: view });
  const registry = createRegistry();
  const adminPort = options.adminPort ?? config.admin.port;
  let admin: AdminServer;
  try {
    admin = await startAdminServer({ host: config.admin.host, port: adminPort, registry, logger });
  } catch (error) {
    throw new Error(`cannot serve the admin endpoints on port ${adminPort}: ${(error as Error).message}`);
  }
  const context: UpContext = {
    config,
    configFile,
    flags: { port: options.port, adminPort: options.adminPort },
    logger,
    registry,
    admin,
  };
  const running: Array<{ name: string; component: RunningComponent }> = [];
  const components = options.components ?? UP_COMPONENTS;
  // /readyz lists every component from the start: one not started yet is not ready, so `up` is ready only once all
  // of them serve. A component the config does not ask for leaves the list.
  const started = new Map<string, RunningComponent>();
  for (const { name } of components) {
    admin.addReadiness({
      name,
      check: () =>
        started.get(name)?.ready?.() ??
        (started.has(name) ? { ok: true } : { ok: false, message: "not started yet" }),
    });
  }
  const stop = async () => {
    for (const { name, component } of running.splice(0).reverse()) {
      try {
        await component.stop();
      } catch (error) {
        logger.error({ component: name, err: (error as Error).message }, "component did not stop cleanly");
      }
    }
    await admin.close();
  };
  try {
    for (const component of components) {
      logger.info({ component: component.name }, "starting");
      const runningComponent = await component.start(context);
      if (runningComponent) {
        running.push({ name: component.name, component: runningComponent });
        started.set(component.name, runningComponent);
      } else admin.removeReadiness(component.name);
    }
  } catch (error) {
    await stop();
    throw error;
  }
  const endpoints = running.flatMap((r) => r.component.endpoints ?? []);
  if (view) {
    const fleetView = new FleetView({ write: (line) => stdout.write(`${line}\n`), color: true });
    const controller = context.controller;
    controller?.onRound((network, output) => fleetView.onRound(network, output, controller.peers(network)));
    // Said as it starts: new members take seconds to catch up, and their own lines follow.
    context.scaler?.onScaling((resize) => fleetView.onScaling(resize));
    stdout.write(
      formatBanner({
        networks: config.networks,
        adminUrl: admin.url,
        endpoints,
        exampleNode: context.fleet?.members(config.networks[0]?.name ?? "")[1]?.name,
        devnet: context.devnet !== undefined,
      }),
    );
  } else {
    logger.info({ admin: admin.url, endpoints }, "lightfleet up: started");
  }
  return { context, endpoints, stop };
}

/** `lightfleet up`: runs until SIGINT or SIGTERM, then stops everything (a second signal exits at once). */
export async function runUp(options: RunUpOptions): Promise<void> {
  const up = await startUp(options);
  const logger: Logger = up.context.logger;
  const signal = await new Promise<NodeJS.Signals>((done) => {
    process.once("SIGINT", () => done("SIGINT"));
    process.once("SIGTERM", () => done("SIGTERM"));
  });
  logger.warn({ signal }, "stopping");
  const force = () => process.exit(130);
  process.once("SIGINT", force);
  process.once("SIGTERM", force);
  await up.stop();
  logger.warn("stopped");
}
