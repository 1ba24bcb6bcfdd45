import { z } from "zod";
import { adminSchema } from "./sections/admin.js";
import { controllerSchema } from "./sections/controller.js";
import { devnetSchema } from "./sections/devnet.js";
import { gatewaySchema } from "./sections/gateway.js";
import { keysSchema } from "./sections/keys.js";
import { logSchema } from "./sections/log.js";
import { networkSchema } from "./sections/network.js";
import { reportDuplicateNames } from "./uniqueNames.js";

/** The one config format of every subcommand. Unknown keys anywhere are errors. */
export const configSchema = z
  .strictObject({
    /** Where state lives (the key store's SQLite file, node data); LIGHTFLEET_DATA_DIR overrides. */
    dataDir: z.string().min(1).default("./data"),
    log: logSchema.prefault({}),
    admin: adminSchema.prefault({}),
    networks: z.array(networkSchema).default([]),
    gateway: gatewaySchema.prefault({}),
    keys: keysSchema.prefault({}),
    controller: controllerSchema.prefault({}),
    devnet: devnetSchema.optional(),
  })
  .superRefine((config, ctx) => {
    reportDuplicateNames(config.networks, "networks", "network", ctx);
    // With a devnet: section, `up` takes the devnet's full nodes as the reserved peers of the networks it runs.
    const devnetNetworks = config.devnet
      ? new Set(config.devnet.networks?.map((n) => n.name) ?? config.networks.map((n) => n.name))
      : new Set<string>();
    config.networks.forEach((network, i) => {
      // Runs on partly invalid input too (zod reports every problem at once), so nothing here is taken for granted.
      if ((network.reservedPeers?.length ?? 0) === 0 && !devnetNetworks.has(network.name)) {
        ctx.addIssue({
          code: "custom",
          path: ["networks", i, "reservedPeers"],
          message: network.reservedPeersGiven
            ? "needs at least one reserved full-node peer (or a devnet: section that runs this network)"
            : "is required",
        });
      }
    });
    const defaults = config.networks.filter((n) => n.gateway.default);
    if (defaults.length > 1) {
      ctx.addIssue({
        code: "custom",
        path: ["networks"],
        message: `only one network may be the gateway default (found ${defaults.map((n) => n.name).join(", ")})`,
      });
    }
  });

export type Config = z.output<typeof configSchema>;
export type ConfigInput = z.input<typeof configSchema>;
