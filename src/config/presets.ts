/** Well-known networks: a preset fills in the chain id and the block interval. */
export interface NetworkPreset {
  chainId: number;
  /** Target block interval in milliseconds, used to scale time-based thresholds. */
  blockTimeMs: number;
  /** Set for networks that no longer exist: a config naming one is refused with this hint. */
  deprecated?: string;
}

export const NETWORK_PRESETS = {
  mainnet: { chainId: 1, blockTimeMs: 12_000 },
  sepolia: { chainId: 11_155_111, blockTimeMs: 12_000 },
  holesky: { chainId: 17_000, blockTimeMs: 12_000 },
  hoodi: { chainId: 560_048, blockTimeMs: 12_000 },
  // Served historically by the public endpoints; kept for operators of private replicas.
  rinkeby: { chainId: 4, blockTimeMs: 15_000 },
  goerli: { chainId: 5, blockTimeMs: 12_000 },
  ropsten: {
    chainId: 3,
    blockTimeMs: 12_000,
    deprecated: "ropsten (chain id 3) is deprecated and shut down; use sepolia or hoodi instead",
  },
} as const satisfies Record<string, NetworkPreset>;

export type PresetName = keyof typeof NETWORK_PRESETS;
export const PRESET_NAMES = Object.keys(NETWORK_PRESETS) as [PresetName, ...PresetName[]];

export function presetForChainId(chainId: number): [PresetName, NetworkPreset] | undefined {
  const found = Object.entries(NETWORK_PRESETS).find(([, p]) => p.chainId === chainId);
  return found as [PresetName, NetworkPreset] | undefined;
}
