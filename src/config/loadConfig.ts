import { readFile } from "node:fs/promises";
import { dirname, isAbsolute, resolve } from "node:path";
import { parseDocument } from "yaml";
import type { z } from "zod";
import type { ConfigProblem } from "./errors.js";
import { ConfigError, formatPath } from "./errors.js";
import { interpolateEnv } from "./interpolateEnv.js";
import type { Config } from "./schema.js";
import { configSchema } from "./schema.js";

/** Environment variables that override a file value (the environment wins, so secrets need not be in the file). */
const ENV_OVERRIDES: Array<[string, (raw: Record<string, unknown>, value: string) => void]> = [
  ["LIGHTFLEET_DATA_DIR", (raw, value) => (raw.dataDir = value)],
  ["DATABASE_URL", (raw, value) => (raw.keys = { ...asObject(raw.keys), databaseUrl: value })],
];

function asObject(value: unknown): Record<string, unknown> {
  return value && typeof value === "object" && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : {};
}

function zodProblems(error: z.ZodError): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  for (const issue of error.issues) {
    if (issue.code === "unrecognized_keys") {
      for (const key of issue.keys) {
        problems.push({ path: formatPath([...issue.path, key]), message: "unknown option" });
      }
    } else if (issue.code === "invalid_type" && issue.input === undefined) {
      problems.push({ path: formatPath(issue.path), message: "is required" });
    } else {
      problems.push({ path: formatPath(issue.path), message: issue.message });
    }
  }
  return problems;
}

/**
 * A file's relative paths (`dataDir`, default `./data`, and a `sqlite:PATH` database) mean the same wherever the
 * command runs: they are resolved against the file's directory. Values from the environment are left to the caller's
 * working directory. Anything that is not a string is left for validation to report.
 */
function resolveFilePaths(raw: Record<string, unknown>, baseDir: string): void {
  const dataDir = raw.dataDir ?? "./data";
  if (typeof dataDir === "string" && dataDir !== "") raw.dataDir = resolve(baseDir, dataDir);
  const keys = raw.keys;
  if (!keys || typeof keys !== "object" || Array.isArray(keys)) return;
  const url = (keys as Record<string, unknown>).databaseUrl;
  if (typeof url !== "string" || !url.startsWith("sqlite:")) return;
  const path = url.slice("sqlite:".length);
  if (path !== "" && !isAbsolute(path))
    raw.keys = { ...keys, databaseUrl: `sqlite:${resolve(baseDir, path)}` };
}

/**
 * Validates an already-parsed document. Every problem is reported at once. With `baseDir` (the file's directory),
 * the document's relative paths are resolved against it.
 */
export function parseConfig(
  document: unknown,
  source = "config",
  env: NodeJS.ProcessEnv = process.env,
  baseDir?: string,
): Config {
  const problems: ConfigProblem[] = [];
  const raw = asObject(interpolateEnv(document ?? {}, env, problems));
  if (
    document !== null &&
    document !== undefined &&
    (typeof document !== "object" || Array.isArray(document))
  ) {
    throw new ConfigError(source, [{ path: "", message: "the document must be a mapping of options" }]);
  }
  if (baseDir !== undefined) resolveFilePaths(raw, baseDir);
  for (const [name, apply] of ENV_OVERRIDES) {
    const value = env[name];
    if (value) apply(raw, value);
  }
  const result = configSchema.safeParse(raw);
  if (!result.success) problems.push(...zodProblems(result.error));
  if (problems.length > 0) throw new ConfigError(source, problems);
  return result.data!;
}

/** Parses YAML text; syntax errors are reported with their line and column. */
export function parseConfigText(
  text: string,
  source = "config",
  env: NodeJS.ProcessEnv = process.env,
  baseDir?: string,
): Config {
  const doc = parseDocument(text, { prettyErrors: true, uniqueKeys: true });
  if (doc.errors.length > 0) {
    throw new ConfigError(
      source,
      doc.errors.map((e) => ({
        path: e.linePos ? `line ${e.linePos[0].line}, column ${e.linePos[0].col}` : "",
        message: e.message.split("\n")[0] ?? e.message,
      })),
    );
  }
  return parseConfig(doc.toJS(), source, env, baseDir);
}

export async function loadConfig(path: string, env: NodeJS.ProcessEnv = process.env): Promise<Config> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new ConfigError(path, [
      {
        path: "",
        message: code === "ENOENT" ? "file not found" : `cannot read the file (${code ?? String(error)})`,
      },
    ]);
  }
  return parseConfigText(text, path, env, dirname(resolve(path)));
}
