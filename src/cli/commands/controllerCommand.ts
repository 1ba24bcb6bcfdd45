import type { Command } from "commander";
import { portOption } from "../options.js";

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
      portOption,
    )
    .action(async (flags: { config: string; adminPort?: number }) => {
      const { runController } = await import("../../kubernetes/controller/runController.js");
      await runController(flags);
    });
}
