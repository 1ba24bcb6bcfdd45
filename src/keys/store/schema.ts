import type { Generated } from "kysely";

/** Times are milliseconds since the epoch, stored as bigint (PostgreSQL) or integer (SQLite). */
export interface UsersTable {
  id: Generated<number>;
  email: string;
  password_hash: string;
  /** Base32 TOTP secret; null until two-factor authentication is enabled. */
  totp_secret: string | null;
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
}

export interface KeyPairsTable {
  access_key_id: string;
  user_id: number;
  /** HMAC-SHA256 of the secret under the server's pepper. */
  secret_hash: string;
  status: string;
  created_at: number;
  last_used_at: number | null;
}

export interface ThrottleTable {
  /** "account:<email>" or "ip:<address>". */
  key: string;
  failures: number;
  window_start: number;
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
  "key-created",
  "key-deleted",
] as const;
export type AuditEvent = (typeof AUDIT_EVENTS)[number];

export interface KeysDatabase {
  audit: AuditTable;
  users: UsersTable;
  sessions: SessionsTable;
  key_pairs: KeyPairsTable;
  throttle: ThrottleTable;
}
