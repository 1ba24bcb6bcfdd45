import { z } from "zod";
import { duration } from "../duration.js";

/** Placeholders a process-fleet command may use; `up` fills them in per member. */
export const COMMAND_PLACEHOLDERS = [
  "port",
  "name",
  "index",
  "dataDir",
  "network",
  "chainId",
  "anvil",
  "genesisTimestamp",
  "geth",
  "enginePort",
  "jwtSecret",
] as const;

const PLACEHOLDER = /\{([A-Za-z]+)\}/g;

/**
 * Light nodes run as child processes by `lightfleet up` (`networks[].nodes:`).
 * The command is a template: `{port}`, `{name}`, `{index}`, `{dataDir}`, `{network}`, `{chainId}` are filled in per
 * member, `{anvil}` is the anvil binary of the @foundry-rs/anvil package, `{genesisTimestamp}` the devnet's genesis.
 * With a geth devnet, `{geth}` is its geth binary, `{enginePort}` and `{jwtSecret}` the member's engine API port and
 * the devnet's JWT secret file (the devnet drives each member through them), and `{dataDir}` is made a fresh geth
 * data directory of the devnet's genesis before every start.
 */
export const processFleetSchema = z.strictObject({
  command: z
    .array(z.string().min(1))
    .min(1)
    .superRefine((args, ctx) => {
      args.forEach((arg, i) => {
        for (const [, name] of arg.matchAll(PLACEHOLDER)) {
          if (!(COMMAND_PLACEHOLDERS as readonly string[]).includes(name!)) {
            ctx.addIssue({
              code: "custom",
              path: [i],
              message: `unknown placeholder {${name}} (known: ${COMMAND_PLACEHOLDERS.map((p) => `{${p}}`).join(" ")})`,
            });
          }
        }
      });
    }),
  replicas: z.number().int().min(0).default(2),
  /** First member listens on basePort, the next on basePort+1, and so on; 0 picks free ports. */
  basePort: z.number().int().min(0).max(65_535).default(0),
  /** How long a started member may take to answer JSON-RPC before the start counts as failed. */
  startTimeout: duration.default(30_000),
});
export type ProcessFleetConfig = z.infer<typeof processFleetSchema>;
