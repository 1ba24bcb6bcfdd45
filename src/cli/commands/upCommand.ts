import { fileURLToPath } from "node:url";
import type { Command } from "commander";
import { portOption } from "../options.js";
import { InvalidArgumentError } from "commander";

/** The example that `npm start` runs: two devnet networks with full and light nodes. */
const DEFAULT_CONFIG = fileURLToPath(new URL("../../../examples/devnet.yaml", import.meta.url));

function logFormat(value: string): "auto" | "json" | "pretty" {
  if (value !== "auto" && value !== "json" && value !== "pretty")
    throw new InvalidArgumentError("must be auto, json or pretty");
  return value;
}

export function registerUpCommand(program: Command): void {
  program
    .command("up")
    .description(
      "run everything on this host: devnet (if configured), light nodes, controller, admin endpoints",
    )
    .option("-c, --config <file>", "YAML config file", DEFAULT_CONFIG)
    .option("--port <port>", "public RPC gateway port (default gateway.port, 8545)", portOption)
    .option(
      "--admin-port <port>",
      "admin port for /metrics, /healthz, /readyz (default admin.port, 9464)",
      portOption,
    )
    .option("--log-format <format>", "auto (readable view on a terminal), json or pretty", logFormat)
    .action(
      async (flags: {
        config: string;
        port?: number;
        adminPort?: number;
        logFormat?: "auto" | "json" | "pretty";
      }) => {
        const { runUp } = await import("../../up/runUp.js");
        await runUp(flags);
      },
    );
}
