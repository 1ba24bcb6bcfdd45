import { startAdminServer } from "../admin/adminServer.js";
import { loadConfig } from "../config/loadConfig.js";
import type { Config } from "../config/schema.js";
import { createLogger } from "../log/logger.js";
import { createRegistry } from "../metrics/registry.js";
import { devnetAdminRouter } from "./adminRoutes.js";
import type { Devnet } from "./devnet.js";
import { startDevnet } from "./devnet.js";
import type { DevnetFlags } from "./devnetOptions.js";
import { resolveDevnetOptions } from "./devnetOptions.js";
import { DevnetInputError } from "./errors.js";
import { formatStatus } from "./formatStatus.js";

export interface RunDevnetFlags extends DevnetFlags {
  config?: string;
  adminPort?: string;
  adminHost?: string;
  logFormat?: "auto" | "json" | "pretty";
}

/** `lightfleet devnet`: a standalone devnet with its admin endpoint, until SIGINT or SIGTERM. */
export async function runDevnet(flags: RunDevnetFlags): Promise<void> {
  const config: Config | undefined = flags.config ? await loadConfig(flags.config) : undefined;
  const options = resolveDevnetOptions(config, flags);
  const adminPort = flags.adminPort !== undefined ? Number(flags.adminPort) : (config?.admin.port ?? 9464);
  if (!Number.isInteger(adminPort) || adminPort < 0 || adminPort > 65_535) {
    throw new DevnetInputError(`--admin-port must be a port number (got ${flags.adminPort})`);
  }
  if (flags.logFormat && !["auto", "json", "pretty"].includes(flags.logFormat)) {
    throw new DevnetInputError(`--log-format must be auto, json or pretty (got ${flags.logFormat})`);
  }
  const logger = createLogger({ ...config?.log, ...(flags.logFormat ? { format: flags.logFormat } : {}) });
  const devnet = await startDevnet({ ...options, logger });
  let admin;
  try {
    admin = await startAdminServer({
      host: flags.adminHost ?? "127.0.0.1",
      port: adminPort,
      registry: createRegistry(),
      logger,
    });
  } catch (error) {
    await devnet.stop();
    throw new Error(`cannot serve the admin endpoint on port ${adminPort}: ${(error as Error).message}`);
  }
  admin.addRoutes(devnetAdminRouter(devnet));
  process.stdout.write(banner(devnet, options.blockTimeMs, admin.url));

  await new Promise<void>((resolve) => {
    const shutdown = (signal: string) => {
      logger.info({ signal }, "stopping the devnet");
      resolve();
    };
    process.once("SIGINT", () => shutdown("SIGINT"));
    process.once("SIGTERM", () => shutdown("SIGTERM"));
  });
  await Promise.allSettled([devnet.stop(), admin.close()]);
  process.stdout.write("devnet stopped\n");
}

function banner(devnet: Devnet, blockTimeMs: number, adminUrl: string): string {
  const status = devnet.status();
  const every = blockTimeMs > 0 ? `a block every ${blockTimeMs} ms` : "blocks only on POST /devnet/mine";
  const node = status.nodes.find((n) => n.role === "light")?.name ?? status.nodes[0]?.name ?? "NODE";
  return [
    `lightfleet devnet: ${status.networks.length} network(s), ${every}, genesis timestamp ${devnet.genesisTimestamp}`,
    ...formatStatus(status).trimEnd().split("\n"),
    ...status.nodes.map((n) => `  ${n.name} ws: ${n.wsUrl}`),
    `admin: ${adminUrl}  (GET ${adminUrl}/devnet/status, POST ${adminUrl}/devnet/faults/NODE)`,
    `faults: lightfleet devnet lag ${node} 5 | stall ${node} | fork ${node} | kill ${node} | heal ${node}` +
      (adminUrl.endsWith(":9464") ? "" : ` --admin ${adminUrl}`),
    "Ctrl-C stops every node.",
    "",
  ].join("\n");
}
