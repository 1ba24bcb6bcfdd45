import { z } from "zod";
import { duration } from "../duration.js";
import { dnsLabel } from "../dnsLabel.js";
import { reportDuplicateNames } from "../uniqueNames.js";

const devnetNetworkSchema = z.strictObject({
  /** Also the prefix of its node names: <name>-full-<i>, <name>-light-<i>. */
  name: dnsLabel,
  chainId: z.number().int().positive(),
  /** Reserved full-node peers of the network. */
  fullNodes: z.number().int().min(1).max(16).default(1),
  /** Light nodes the devnet starts itself (`up` runs its own through the process fleet instead). */
  lightNodes: z.number().int().min(0).max(64).default(0),
});

/**
 * The local devnet (`lightfleet devnet`, and `lightfleet up` when present). Without `networks`, the devnet
 * runs one network per entry of the top-level `networks` (same name and chain id), else one network "devnet".
 */
export const devnetSchema = z
  .strictObject({
    /** Interval between blocks; 0 mines only on request (POST /devnet/mine). */
    blockTime: duration.default(2_000),
    /** Genesis timestamp (Unix seconds) shared by every node; default the start time. */
    genesisTimestamp: z.number().int().positive().optional(),
    /** Nodes listen on basePort, basePort+1, ... in network order; 0 picks free ports. */
    basePort: z.number().int().min(0).max(65_535).default(0),
    networks: z.array(devnetNetworkSchema).min(1).optional(),
    /**
     * A front before every light node, which clients reach it through, so that `devnet slow NODE` can delay its state
     * reads (default false: a front costs one more hop per call).
     */
    latencyFronts: z.boolean().optional(),
    /**
     * What the nodes run: anvil (the block driver mines every node alike), or geth (real geth nodes kept on one chain
     * by the block driver through their engine API; docs/devnet.md says which faults act how). Default anvil.
     */
    implementation: z.enum(["anvil", "geth"]).optional(),
    /** The geth executable, for implementation geth (`npm run geth` builds one into ~/.cache/lightfleet); default `geth` on PATH. */
    gethBinary: z.string().min(1).optional(),
  })
  .superRefine((devnet, ctx) => {
    reportDuplicateNames(devnet.networks, "networks", "devnet network", ctx);
  });
export type DevnetConfig = z.output<typeof devnetSchema>;
