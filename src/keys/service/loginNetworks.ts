import { createHmac } from "node:crypto";
import { networkOf } from "../throttle/hashingGate.js";
import type { KeysContext } from "./context.js";

/** Networks kept per account (the newest), and how long one stays known without a login from it. */
export const KNOWN_NETWORKS_PER_ACCOUNT = 10;
export const KNOWN_NETWORK_MS = 90 * 86_400_000;

/**
 * The networks an account completed logins from (NIST SP 800-63B 5.2.2 lists "IP addresses from which the subscriber
 * has been successfully authenticated before" among the ways to limit guessing). An attempt from one goes ahead of
 * other networks' in the account's line (see throttle/hashingGate.ts): the owner on a new browser at home or at work
 * is checked after the check in progress, not after every guess of a botnet whose addresses are all elsewhere. It
 * changes only the order, never what an attempt may do: a guess from the owner's network is counted and limited as
 * any other. Stored as HMACs of the account and the network under the pepper, so the table neither lists where the
 * owner logs in from nor shows which accounts share a network.
 */
export async function isKnownNetwork(ctx: KeysContext, email: string, ip: string): Promise<boolean> {
  const row = await ctx.db
    .selectFrom("login_networks")
    .innerJoin("users", "users.id", "login_networks.user_id")
    .select("login_networks.last_at")
    .where("users.email", "=", email)
    .where("login_networks.network_hash", "=", networkHash(ctx.pepper, email, ip))
    .where("login_networks.last_at", ">", ctx.clock() - KNOWN_NETWORK_MS)
    .executeTakeFirst();
  return row !== undefined;
}

/** Records the network of a complete login, keeping the account's newest few. */
export async function rememberNetwork(
  ctx: KeysContext,
  user: { id: number; email: string },
  ip: string,
): Promise<void> {
  const userId = user.id;
  const now = ctx.clock();
  const hash = networkHash(ctx.pepper, user.email, ip);
  await ctx.db
    .insertInto("login_networks")
    .values({ user_id: userId, network_hash: hash, last_at: now })
    .onConflict((oc) => oc.columns(["user_id", "network_hash"]).doUpdateSet({ last_at: now }))
    .execute();
  const newest = await ctx.db
    .selectFrom("login_networks")
    .select("network_hash")
    .where("user_id", "=", userId)
    .orderBy("last_at", "desc")
    .limit(KNOWN_NETWORKS_PER_ACCOUNT)
    .execute();
  await ctx.db
    .deleteFrom("login_networks")
    .where("user_id", "=", userId)
    .where(
      "network_hash",
      "not in",
      newest.map((r) => r.network_hash),
    )
    .execute();
}

function networkHash(pepper: Buffer, email: string, ip: string): string {
  return createHmac("sha256", pepper)
    .update(`network\0${email}\0${networkOf(ip)}`)
    .digest("hex");
}
