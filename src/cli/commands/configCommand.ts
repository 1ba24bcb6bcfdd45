import type { Command } from "commander";
import { EXIT_CONFIG } from "../fail.js";

export function registerConfigCommand(program: Command): void {
  const config = program.command("config").description("work with lightfleet configuration files");
  config
    .command("check")
    .description("validate a config file: exits 0, or 2 with every problem listed by path")
    .argument("<file>", "YAML config file")
    .action(async (file: string) => {
      // The schema and YAML parser load only for this command: every other command starts without them.
      const [{ loadConfig }, { configWarnings }, { ConfigError, formatProblems }] = await Promise.all([
        import("../../config/loadConfig.js"),
        import("../../config/configWarnings.js"),
        import("../../config/errors.js"),
      ]);
      try {
        const loaded = await loadConfig(file);
        const networks = loaded.networks.map((n) => `${n.name} (chain ${n.chainId})`).join(", ") || "none";
        const warnings = configWarnings(loaded);
        const note = warnings.length > 0 ? `, ${warnings.length} warning(s)` : "";
        process.stdout.write(`${file}: ok (networks: ${networks})${note}\n`);
        for (const w of warnings) process.stderr.write(`warning: ${w.path}: ${w.message}\n`);
      } catch (error) {
        if (!(error instanceof ConfigError)) throw error;
        process.stderr.write(
          `${file}: ${error.problems.length} problem(s)\n${formatProblems(error.problems)}\n`,
        );
        process.exitCode = EXIT_CONFIG;
      }
    });
}
