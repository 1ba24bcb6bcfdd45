import { z } from "zod";

/** The key API (`keys:`). Secrets come from the environment (see README, "Secrets"). */
export const keysSchema = z.strictObject({
  host: z.string().default("0.0.0.0"),
  port: z.number().int().min(0).max(65_535).default(8080),
  /** `sqlite:PATH` or `postgres://…`; `DATABASE_URL` overrides; default a SQLite file in the data directory. */
  databaseUrl: z.string().optional(),
  /** Session cookies only over TLS. Turn off for plain http on localhost (as `up` on a devnet does). */
  secureCookies: z.boolean().default(true),
  /** Proxies in front whose X-Forwarded-For is trusted for per-IP login throttling (an ingress: 1). */
  trustProxy: z.number().int().min(0).default(0),
  /** Audit entries older than this many days are dropped (failed logins for unknown emails after 7 days). */
  auditRetentionDays: z.number().int().min(1).max(3650).default(90),
});
export type KeysConfig = z.infer<typeof keysSchema>;
