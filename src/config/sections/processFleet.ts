import { z } from "zod";

/**
 * Light nodes run as child processes by `lightfleet up` (`networks[].nodes:`).
 * The command is a template: `{port}`, `{name}`, `{index}`, `{dataDir}` are filled in per member.
 */
export const processFleetSchema = z.strictObject({
  command: z.array(z.string().min(1)).min(1),
  replicas: z.number().int().min(0).default(2),
  /** First member listens on basePort, the next on basePort+1, and so on; 0 picks free ports. */
  basePort: z.number().int().min(0).max(65_535).default(0),
});
export type ProcessFleetConfig = z.infer<typeof processFleetSchema>;
