import type { Endpoint } from "./component.js";

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
          `Inject a fault: lightfleet devnet lag ${node} 5 | stall ${node} | fork ${node} | kill ${node} | heal ${node}` +
            (input.adminUrl.endsWith(":9464") ? "" : ` --admin ${input.adminUrl}`),
          `  or: curl -X POST ${input.adminUrl}/devnet/faults/${node} -H 'content-type: application/json' -d '{"kind":"lag","blocks":5}'`,
        ]
      : []),
    "Ctrl-C stops everything.",
    "",
  ].join("\n");
}
