import type { DevnetStatus } from "./devnet.js";
import { describeFault } from "./faults.js";

/** The devnet status as a few readable lines: one per network, then one per node. */
export function formatStatus(status: DevnetStatus): string {
  const lines: string[] = [];
  for (const network of status.networks) {
    const head = `head ${network.head.number} ${network.head.hash.slice(0, 10)}`;
    lines.push(`${network.name} (chain ${network.chainId}): ${head}${network.halted ? "  HALTED" : ""}`);
    for (const node of status.nodes.filter((n) => n.network === network.name)) {
      const nodeHead = node.head ? `head ${node.head.number}` : "head ?";
      const state = node.reachable ? "" : "  unreachable";
      const fault = node.fault ? `  fault: ${describeFault(node.fault)}` : "";
      lines.push(
        `  ${node.name.padEnd(24)} ${node.role.padEnd(5)} ${node.httpUrl.padEnd(24)} ${nodeHead}${fault}${state}`,
      );
    }
  }
  return `${lines.join("\n")}\n`;
}
