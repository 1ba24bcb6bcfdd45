import { DevnetNotFoundError } from "./errors.js";

/** Name look-ups over a devnet's networks and their nodes, the same for every implementation's driver. */

export interface NamedNetwork<N extends { name: string }> {
  name: string;
  nodes: N[];
}

/** The network named `name`; a not-found error listing the networks otherwise. */
export function networkNamed<T extends NamedNetwork<{ name: string }>>(
  networks: readonly T[],
  name: string,
): T {
  const network = networks.find((n) => n.name === name);
  if (!network) {
    throw new DevnetNotFoundError(
      `no devnet network named ${name} (networks: ${networks.map((n) => n.name).join(", ")})`,
    );
  }
  return network;
}

/** The node named `name` and its network, or undefined. */
export function findNode<N extends { name: string }, T extends NamedNetwork<N>>(
  networks: readonly T[],
  name: string,
): { network: T; node: N } | undefined {
  for (const network of networks) {
    const node = network.nodes.find((n) => n.name === name);
    if (node) return { network, node };
  }
  return undefined;
}

/** The node named `name` and its network; a not-found error listing the nodes otherwise. */
export function nodeNamed<N extends { name: string }, T extends NamedNetwork<N>>(
  networks: readonly T[],
  name: string,
): { network: T; node: N } {
  const found = findNode<N, T>(networks, name);
  if (!found) {
    const names = networks.flatMap((n) => n.nodes.map((node) => node.name));
    throw new DevnetNotFoundError(`no devnet node named ${name} (nodes: ${names.join(", ")})`);
  }
  return found;
}
