import { z } from "zod";
import { dnsLabel } from "../dnsLabel.js";
import { duration } from "../duration.js";
import { NETWORK_PRESETS, PRESET_NAMES } from "../presets.js";
import { httpUrl, wsUrl } from "../urls.js";
import { networkGatewaySchema } from "./gateway.js";
import { derivedTimeThresholds, healthSchema, timeThresholdProblems } from "./health.js";
import { processFleetSchema } from "./processFleet.js";
import { scalingSchema } from "./scaling.js";
import { reportDuplicateNames } from "../uniqueNames.js";

export const peerSchema = z.strictObject({
  name: dnsLabel,
  http: httpUrl,
  ws: wsUrl.optional(),
});
export type PeerConfig = z.infer<typeof peerSchema>;

export const networkSchema = z
  .strictObject({
    name: dnsLabel,
    /** A well-known network; fills in chainId and blockTime. */
    preset: z.enum(PRESET_NAMES).optional(),
    chainId: z.number().int().positive().optional(),
    /** Target block interval; from the preset, else 12s. */
    blockTime: duration.optional(),
    /**
     * The operator's full nodes: the reference every light node is compared with. At least one, unless the config's
     * devnet runs this network (its full nodes are then the peers; see schema.ts).
     */
    reservedPeers: z.array(peerSchema).optional(),
    health: healthSchema.prefault({}),
    gateway: networkGatewaySchema.prefault({}),
    scaling: scalingSchema.prefault({}),
    nodes: processFleetSchema.optional(),
  })
  .superRefine((network, ctx) => {
    const preset = network.preset ? NETWORK_PRESETS[network.preset] : undefined;
    if (preset && "deprecated" in preset) {
      ctx.addIssue({ code: "custom", path: ["preset"], message: preset.deprecated });
    }
    if (preset && network.chainId !== undefined && network.chainId !== preset.chainId) {
      ctx.addIssue({
        code: "custom",
        path: ["chainId"],
        message: `is ${network.chainId} but preset ${network.preset} has chain id ${preset.chainId}`,
      });
    }
    if (network.chainId === 3) {
      ctx.addIssue({ code: "custom", path: ["chainId"], message: NETWORK_PRESETS.ropsten.deprecated });
    }
    if (!preset && network.chainId === undefined) {
      ctx.addIssue({ code: "custom", path: ["chainId"], message: "is required when no preset is given" });
    }
    if (network.scaling.minReplicas > network.scaling.maxReplicas) {
      ctx.addIssue({
        code: "custom",
        path: ["scaling", "minReplicas"],
        message: "must not exceed maxReplicas",
      });
    }
    if (network.gateway.service && network.gateway.upstreams.length > 0) {
      ctx.addIssue({
        code: "custom",
        path: ["gateway", "service"],
        message: "set gateway.upstreams or gateway.service, not both",
      });
    }
    const blockTimeMs = network.blockTime ?? preset?.blockTimeMs ?? 12_000;
    for (const problem of timeThresholdProblems(network.health, blockTimeMs)) {
      ctx.addIssue({ code: "custom", path: ["health", problem.option], message: problem.message });
    }
    reportDuplicateNames(network.reservedPeers, "reservedPeers", "peer", ctx);
  })
  .transform((network) => {
    const preset = network.preset ? NETWORK_PRESETS[network.preset] : undefined;
    const blockTimeMs = network.blockTime ?? preset?.blockTimeMs ?? 12_000;
    return {
      ...network,
      reservedPeers: network.reservedPeers ?? [],
      reservedPeersGiven: network.reservedPeers !== undefined,
      chainId: network.chainId ?? preset?.chainId ?? 0,
      blockTimeMs,
      health: {
        ...network.health,
        ...derivedTimeThresholds(network.health, blockTimeMs),
      },
    };
  });

export type NetworkConfig = z.output<typeof networkSchema>;
export type ResolvedHealthConfig = NetworkConfig["health"];
