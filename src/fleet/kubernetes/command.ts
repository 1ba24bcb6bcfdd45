import type { Command } from "commander";
import { InvalidArgumentError } from "commander";

function port(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || n > 65_535) throw new InvalidArgumentError("must be a port number (0-65535)");
  return n;
}

export function registerControllerCommand(program: Command): void {
  program
    .command("controller")
    .description(
      "run the Kubernetes controller (in-cluster, or the current kubeconfig context) over the LightNodePools",
    )
    .requiredOption("-c, --config <file>", "YAML config file")
    .option(
      "--admin-port <port>",
      "admin port for /metrics, /healthz, /readyz (default admin.port, 9464)",
      port,
    )
    .action(async (flags: { config: string; adminPort?: number }) => {
      const { runController } = await import("./runController.js");
      await runController(flags);
    });
}
