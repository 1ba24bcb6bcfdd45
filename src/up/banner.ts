import { isAbsolute, relative } from "node:path";
import type { Endpoint } from "./component.js";

/**
 * How hints spell the command: after `npm ci` in a checkout `lightfleet` is not on PATH, while npx finds it there
 * (the build links it into node_modules/.bin) as well as in an installed package.
 */
export const CLI_HINT = "npx lightfleet";

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
}): string {
  const width = Math.max(12, ...input.endpoints.map((e) => e.label.length));
  const line = (label: string, url: string, note?: string) =>
    `  ${label.padEnd(width)}  ${url}${note ? `  (${note})` : ""}`;
  const networks = input.networks.map((n) => `${n.name} (chain ${n.chainId})`).join(", ") || "none";
  const node = input.exampleNode ?? "NODE";
  return [
    `lightfleet up: ${networks}`,
    line("admin", input.adminUrl, "/metrics /healthz /readyz"),
    ...input.endpoints.map((e) => line(e.label, e.url, e.note)),
    ...(input.devnet
      ? [
          `Inject a fault: ${CLI_HINT} devnet lag ${node} 5 | stall ${node} | fork ${node} | kill ${node} | heal ${node}` +
            (input.adminUrl.endsWith(":9464") ? "" : ` --admin ${input.adminUrl}`),
          `  or: curl -X POST ${input.adminUrl}/devnet/faults/${node} -H 'content-type: application/json' -d '{"kind":"lag","blocks":5}'`,
        ]
      : []),
    "Ctrl-C stops everything.",
    "",
  ].join("\n");
}
