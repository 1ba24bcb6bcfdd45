import { ConfigError, formatProblems } from "../config/errors.js";

/** Exit code for a bad config or bad usage (as `config check` uses it). */
export const EXIT_CONFIG = 2;

/** Turns a startup failure into one clear line (plus the list of config problems) and an exit code. */
export function failAndExit(error: unknown): never {
  if (error instanceof ConfigError) {
    process.stderr.write(
      `lightfleet: invalid configuration ${error.source}\n${formatProblems(error.problems)}\n`,
    );
    process.exit(EXIT_CONFIG);
  }
  const message = error instanceof Error ? error.message : String(error);
  process.stderr.write(`lightfleet: ${message}\n`);
  process.exit(1);
}
