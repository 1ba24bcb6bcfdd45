import { z } from "zod";

/** The key API (`keys:`). Secrets come from the environment (see README, "Secrets"). */
export const keysSchema = z.strictObject({
  host: z.string().default("0.0.0.0"),
  port: z.number().int().min(0).max(65_535).default(8080),
  /** `sqlite:PATH` or `postgres://…`; `DATABASE_URL` overrides; default a SQLite file in the data directory. */
  databaseUrl: z.string().optional(),
});
export type KeysConfig = z.infer<typeof keysSchema>;
