import { readFileSync } from "node:fs";
import { isAbsolute, join, relative } from "node:path";
import type { Endpoint } from "./component.js";

/**
 * How hints spell the command. `npx lightfleet` finds it wherever the package is installed, at once. In lightfleet's
 * own checkout (the working directory's package.json has the `lightfleet` bin) npx takes npm's self-execution path
 * instead: it installs the checkout into its cache and reads the whole dependency tree before starting anything, 3 to
 * 5 s. There the hint names the command the build links into node_modules/.bin (not on PATH), which starts in a few
 * hundred milliseconds.
 */
export function cliHint(cwd = process.cwd()): string {
  return hasOwnBin(cwd) ? "node_modules/.bin/lightfleet" : "npx lightfleet";
}

function hasOwnBin(dir: string): boolean {
  try {
    const pkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as {
      name?: unknown;
      bin?: unknown;
    };
    if (typeof pkg.bin === "string") return pkg.name === "lightfleet";
    return typeof pkg.bin === "object" && pkg.bin !== null && "lightfleet" in pkg.bin;
  } catch {
    return false;
  }
}

/** A config file as a hint names it: relative to the working directory when it lies below it. */
export function configHint(file: string, cwd = process.cwd()): string {
  const rel = relative(cwd, file);
  return rel !== "" && !rel.startsWith("..") && !isAbsolute(rel) ? rel : file;
}

/** The start-up banner of `up` on a terminal: what runs where, and how to poke at it. */
export function formatBanner(input: {
  networks: ReadonlyArray<{ name: string; chainId: number }>;
  adminUrl: string;
  endpoints: ReadonlyArray<Endpoint>;
  exampleNode?: string;
  /** Whether a devnet runs (and so takes faults). */
  devnet: boolean;
  /** How to call the command (default: cliHint()). */
  cli?: string;
}): string {
  const width = Math.max(12, ...input.endpoints.map((e) => e.label.length));
  const line = (label: string, url: string, note?: string) =>
    `  ${label.padEnd(width)}  ${url}${note ? `  (${note})` : ""}`;
  const networks = input.networks.map((n) => `${n.name} (chain ${n.chainId})`).join(", ") || "none";
  const node = input.exampleNode ?? "NODE";
  const cli = input.cli ?? cliHint();
  return [
    `lightfleet up: ${networks}`,
    line("admin", input.adminUrl, "/metrics /healthz /readyz"),
    ...input.endpoints.map((e) => line(e.label, e.url, e.note)),
    ...(input.devnet
      ? [
          `Inject a fault: ${cli} devnet lag ${node} 5 | stall ${node} | fork ${node} | kill ${node} | heal ${node}` +
            (input.adminUrl.endsWith(":9464") ? "" : ` --admin ${input.adminUrl}`),
          `  or: curl -X POST ${input.adminUrl}/devnet/faults/${node} -H 'content-type: application/json' -d '{"kind":"lag","blocks":5}'`,
        ]
      : []),
    "Ctrl-C stops everything.",
    "",
  ].join("\n");
}
