import { z } from "zod";

export const logSchema = z.strictObject({
  level: z.enum(["trace", "debug", "info", "warn", "error", "fatal"]).default("info"),
  /** `auto`: readable on a terminal, JSON otherwise. */
  format: z.enum(["auto", "json", "pretty"]).default("auto"),
});
export type LogConfig = z.infer<typeof logSchema>;
