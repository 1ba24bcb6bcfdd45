import type { KeysContext } from "./context.js";
import { KNOWN_NETWORK_MS } from "./loginNetworks.js";

/** Audit entries are kept this long by default; failed logins for emails with no account a shorter time. */
const AUDIT_RETENTION_MS = 90 * 86_400_000;
const STRANGER_AUDIT_RETENTION_MS = 7 * 86_400_000;

/**
 * Drops what no longer counts: throttle rows whose window has ended, networks of logins long past (see
 * loginNetworks.ts), audit entries past the retention, and failed
 * logins for emails with no account past the shorter one (anyone can make those, as many as the throttle lets them).
 */
export async function prune(ctx: KeysContext): Promise<{ throttle: number; audit: number }> {
  const now = ctx.clock();
  const throttle = await ctx.db
    .deleteFrom("throttle")
    .where("window_start", "<", now - Math.max(ctx.failureWindowMs, ctx.slowDown.maxDelayMs))
    .executeTakeFirst();
  const old = await ctx.db
    .deleteFrom("audit")
    .where("at", "<", now - (ctx.options.auditRetentionMs ?? AUDIT_RETENTION_MS))
    .executeTakeFirst();
  const strangers = await ctx.db
    .deleteFrom("audit")
    .where("at", "<", now - (ctx.options.strangerAuditRetentionMs ?? STRANGER_AUDIT_RETENTION_MS))
    .where("event", "in", [
      "login-failed",
      "login-throttled",
      "cross-site-refused",
      "key-auth-failed",
      "key-auth-throttled",
    ])
    .where((eb) =>
      eb.or([eb("email", "is", null), eb("email", "not in", eb.selectFrom("users").select("email"))]),
    )
    .executeTakeFirst();
  // A network with no login for this long is no longer the owner's.
  await ctx.db
    .deleteFrom("login_networks")
    .where("last_at", "<", now - KNOWN_NETWORK_MS)
    .execute();
  return {
    throttle: Number(throttle.numDeletedRows),
    audit: Number(old.numDeletedRows) + Number(strangers.numDeletedRows),
  };
}
