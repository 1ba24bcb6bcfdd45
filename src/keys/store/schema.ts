import type { Generated } from "kysely";

/** Times are milliseconds since the epoch, stored as bigint (PostgreSQL) or integer (SQLite). */
export interface UsersTable {
  id: Generated<number>;
  email: string;
  password_hash: string;
  /** TOTP seed sealed under the seed key (see crypto/seedCipher.ts); null until two-factor authentication is on. */
  totp_secret: string | null;
  /** A sealed seed set up from the page, waiting for a code to confirm it. */
  totp_pending: string | null;
  /** Highest TOTP time step accepted, so a code is never accepted twice. */
  totp_last_step: number | null;
  disabled: number;
  created_at: number;
}

export interface SessionsTable {
  /** SHA-256 of the cookie value: a database leak yields no usable session. */
  token_hash: string;
  user_id: number;
  /** 1 while the second factor is still owed. */
  two_factor_pending: number;
  created_at: number;
  last_seen_at: number;
  /** A short public id for the session list (never the cookie or its hash). */
  id: string | null;
  ip: string | null;
  user_agent: string | null;
}

export interface KeyPairsTable {
  access_key_id: string;
  user_id: number;
  /** HMAC-SHA256 of the secret under the server's pepper. */
  secret_hash: string;
  /** "Active" or "Inactive". */
  status: string;
  /** The owner's label for the pair. */
  name: string | null;
  created_at: number;
  last_used_at: number | null;
}

export interface ThrottleTable {
  /**
   * "pair:<account>|<address>", "account:<account>", "ip:<address>", "totp:<user id>" or "password:<user id>" (the
   * re-authentication before a password change or turning two-factor off); accounts as hashes.
   */
  key: string;
  /** Attempts counted in the window (reserved before evaluation; a success is taken back). */
  failures: number;
  window_start: number;
  last_at: number | null;
}

/** Recovery codes of accounts with two-factor authentication on, as HMACs; each works once. */
export interface RecoveryCodesTable {
  code_hash: string;
  user_id: number;
  used_at: number | null;
}

/**
 * A network (the /24 of an IPv4 address, the /64 of an IPv6 one) an account completed a login from (both factors when
 * it has two), as an HMAC under the pepper, and when last: the owner's attempts from it go ahead of other networks'.
 */
export interface LoginNetworksTable {
  user_id: number;
  network_hash: string;
  last_at: number;
}

/** Who did what: logins, second factors, key creation and deletion. Never a password, secret or session id. */
export interface AuditTable {
  id: Generated<number>;
  at: number;
  /** The account's email as typed at login (failed logins too), or the owner's. */
  email: string | null;
  event: AuditEvent;
  detail: string;
}

export const AUDIT_EVENTS = [
  "login",
  "login-failed",
  "two-factor",
  "two-factor-failed",
  "logout",
  "login-throttled",
  "cross-site-refused",
  "key-created",
  "key-deleted",
  "key-delete-failed",
  "key-updated",
  "session-revoked",
  "password-changed",
  "two-factor-enabled",
  "two-factor-disabled",
  "two-factor-disable-failed",
  "two-factor-enable-failed",
  "key-auth-failed",
  "key-auth-throttled",
  "user-added",
  "user-disabled",
  "user-enabled",
] as const;
export type AuditEvent = (typeof AUDIT_EVENTS)[number];

export interface KeysDatabase {
  audit: AuditTable;
  users: UsersTable;
  sessions: SessionsTable;
  key_pairs: KeyPairsTable;
  throttle: ThrottleTable;
  recovery_codes: RecoveryCodesTable;
  login_networks: LoginNetworksTable;
}
