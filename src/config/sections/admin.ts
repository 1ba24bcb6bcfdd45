import { z } from "zod";

/** The admin endpoints (`/metrics`, `/healthz`, `/readyz`) of every long-running subcommand. */
export const adminSchema = z.strictObject({
  host: z.string().default("0.0.0.0"),
  port: z.number().int().min(0).max(65_535).default(9464),
});
export type AdminConfig = z.infer<typeof adminSchema>;
