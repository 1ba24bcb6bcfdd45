import type { Config } from "../config/schema.js";
import { parseDuration } from "../config/duration.js";
import type { DevnetNetworkOptions, StartDevnetOptions } from "./devnet.js";
import { DevnetInputError } from "./errors.js";

/** `lightfleet devnet` flags, as commander hands them over (strings, unvalidated). */
export interface DevnetFlags {
  network?: string[];
  fullNodes?: string;
  lightNodes?: string;
  blockTime?: string;
  genesisTimestamp?: string;
  basePort?: string;
  latencyFronts?: boolean;
  implementation?: string;
  geth?: string;
}

export const DEFAULT_DEVNET_NETWORK: DevnetNetworkOptions = { name: "devnet", chainId: 31_337 };

/**
 * The devnet to start, from the config (its `devnet:` section, else its networks) and flags, flags winning.
 * Pure: the caller loads the config and reports a DevnetInputError as bad usage.
 */
export function resolveDevnetOptions(
  config: Config | undefined,
  flags: DevnetFlags,
): Omit<StartDevnetOptions, "logger"> {
  const section = config?.devnet;
  let networks: DevnetNetworkOptions[] =
    section?.networks ??
    (config?.networks.length
      ? config.networks.map((n) => ({ name: n.name, chainId: n.chainId }))
      : [DEFAULT_DEVNET_NETWORK]);
  if (flags.network?.length) networks = flags.network.map(parseNetworkFlag);
  const fullNodes = flags.fullNodes === undefined ? undefined : count("--full-nodes", flags.fullNodes, 1);
  const lightNodes = flags.lightNodes === undefined ? undefined : count("--light-nodes", flags.lightNodes, 0);
  networks = networks.map((n) => ({
    ...n,
    ...(fullNodes !== undefined ? { fullNodes } : {}),
    ...(lightNodes !== undefined ? { lightNodes } : {}),
  }));
  let blockTimeMs = section?.blockTime ?? 2_000;
  if (flags.blockTime !== undefined) {
    const parsed = parseDuration(
      /^\d+(\.\d+)?$/.test(flags.blockTime) ? Number(flags.blockTime) : flags.blockTime,
    );
    if (parsed === undefined) {
      throw new DevnetInputError(
        `--block-time must be a duration such as 500ms or 2s (got ${flags.blockTime})`,
      );
    }
    blockTimeMs = parsed;
  }
  const genesisTimestamp =
    flags.genesisTimestamp !== undefined
      ? count("--genesis-timestamp", flags.genesisTimestamp, 1)
      : section?.genesisTimestamp;
  const basePort =
    flags.basePort !== undefined ? count("--base-port", flags.basePort, 0) : (section?.basePort ?? 0);
  if (basePort > 65_535) throw new DevnetInputError(`--base-port must be a port number (got ${basePort})`);
  const latencyFronts = flags.latencyFronts ?? section?.latencyFronts;
  const implementation = flags.implementation ?? section?.implementation ?? "anvil";
  if (implementation !== "anvil" && implementation !== "geth") {
    throw new DevnetInputError(`--implementation must be anvil or geth (got ${implementation})`);
  }
  const gethBinary = implementation === "geth" ? (flags.geth ?? section?.gethBinary) : undefined;
  if (flags.geth !== undefined && implementation !== "geth") {
    throw new DevnetInputError("--geth applies to --implementation geth only");
  }
  return {
    networks,
    ...(implementation === "geth" ? { implementation } : {}),
    ...(gethBinary !== undefined ? { gethBinary } : {}),
    blockTimeMs,
    basePort,
    ...(latencyFronts !== undefined ? { latencyFronts } : {}),
    ...(genesisTimestamp !== undefined ? { genesisTimestamp } : {}),
  };
}

/** "alpha:31337" -> { name: "alpha", chainId: 31337 } */
export function parseNetworkFlag(value: string): DevnetNetworkOptions {
  const match = /^([a-z0-9](?:[-a-z0-9]*[a-z0-9])?):(\d+)$/.exec(value);
  if (!match || Number(match[2]) <= 0) {
    throw new DevnetInputError(`--network must be NAME:CHAINID such as devnet:31337 (got ${value})`);
  }
  return { name: match[1]!, chainId: Number(match[2]) };
}

function count(flag: string, value: string, min: number): number {
  if (!/^\d+$/.test(value) || Number(value) < min) {
    throw new DevnetInputError(`${flag} must be a whole number of at least ${min} (got ${value})`);
  }
  return Number(value);
}
