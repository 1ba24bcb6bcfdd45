import type { Command } from "commander";
import { portOption } from "../options.js";

export function registerGatewayCommand(program: Command): void {
  program
    .command("gateway")
    .description(
      "serve the public JSON-RPC endpoints (HTTP POST and WebSocket /ws) in front of the configured upstreams",
    )
    .requiredOption("-c, --config <file>", "YAML config file (networks[].gateway.upstreams lists the nodes)")
    .option("--port <port>", "public RPC port (default gateway.port, 8545)", portOption)
    .option(
      "--admin-port <port>",
      "admin port for /metrics, /healthz, /readyz (default admin.port, 9464)",
      portOption,
    )
    .action(async (flags: { config: string; port?: number; adminPort?: number }) => {
      const { runGateway } = await import("../../gateway/runGateway.js");
      await runGateway(flags);
    });
}
