import { ACCESS_KEY_ID } from "../crypto/secrets.js";

/** A failure the HTTP layer turns into a problem answer; `code` is stable and machine-readable. */
export class KeysError extends Error {
  constructor(
    readonly code:
      | "invalid-credentials"
      | "two-factor-required"
      | "invalid-two-factor-token"
      | "session-required"
      | "key-limit-exceeded"
      | "key-not-found"
      | "session-not-found"
      | "two-factor-already-enabled"
      | "two-factor-setup-required"
      | "two-factor-not-enabled"
      | "throttled",
    message: string,
    readonly extra: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = "KeysError";
  }
}

export const throttled = (retryAfterMs: number, message = "too many attempts; try again later") =>
  new KeysError("throttled", message, { retryAfterSeconds: Math.max(1, Math.ceil(retryAfterMs / 1000)) });

export const slowedDown = (retryAfterMs: number) =>
  throttled(
    retryAfterMs,
    "this account is slowed down after many failed logins; log in from a browser that logged in before, or give the password with a current two-factor code",
  );

export const twoFactorNotOn = () =>
  new KeysError("two-factor-not-enabled", "two-factor authentication is not on for this account");

/** A 404 that names the id only when it is one: a 5,000-character "id" is not echoed back. */
export function notFound(accessKeyId: string): KeysError {
  return new KeysError(
    "key-not-found",
    ACCESS_KEY_ID.test(accessKeyId)
      ? `no key pair ${accessKeyId} on this account`
      : "no key pair with that id on this account (ids are LFAK and 16 characters)",
  );
}
