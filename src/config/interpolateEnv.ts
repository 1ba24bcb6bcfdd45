import type { ConfigProblem } from "./errors.js";
import { formatPath } from "./errors.js";

const REFERENCE = /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g;

/**
 * Replaces `${NAME}` and `${NAME:-default}` in every string of a parsed document, so secrets can stay in the
 * environment and out of the file. An unset variable without a default is a problem at that path.
 */
export function interpolateEnv(
  value: unknown,
  env: NodeJS.ProcessEnv,
  problems: ConfigProblem[],
  path: PropertyKey[] = [],
): unknown {
  if (typeof value === "string") {
    return value.replace(REFERENCE, (_match, name: string, fallback: string | undefined) => {
      const found = env[name];
      if (found !== undefined && found !== "") return found;
      if (fallback !== undefined) return fallback;
      problems.push({ path: formatPath(path), message: `environment variable ${name} is not set` });
      return "";
    });
  }
  if (Array.isArray(value)) return value.map((item, i) => interpolateEnv(item, env, problems, [...path, i]));
  if (value && typeof value === "object") {
    return Object.fromEntries(
      Object.entries(value).map(([key, item]) => [key, interpolateEnv(item, env, problems, [...path, key])]),
    );
  }
  return value;
}
