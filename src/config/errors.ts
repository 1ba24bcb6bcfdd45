/** One problem in a config file, located by its path (`networks[1].reservedPeers[0].http`). */
export interface ConfigProblem {
  path: string;
  message: string;
}

export class ConfigError extends Error {
  constructor(
    readonly source: string,
    readonly problems: ConfigProblem[],
  ) {
    super(`${source}: ${problems.length} problem(s) in the configuration:\n${formatProblems(problems)}`);
    this.name = "ConfigError";
  }
}

export function formatProblems(problems: ConfigProblem[]): string {
  return problems.map((p) => `  ${p.path ? `${p.path}: ` : ""}${p.message}`).join("\n");
}

/** ["networks", 1, "reservedPeers", 0, "http"] -> "networks[1].reservedPeers[0].http" */
export function formatPath(path: ReadonlyArray<PropertyKey>): string {
  let out = "";
  for (const part of path) {
    if (typeof part === "number") out += `[${part}]`;
    else out += out ? `.${String(part)}` : String(part);
  }
  return out;
}
