import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";

/**
 * Device cookies (OWASP, "slow down online guessing attacks with device cookies"): after a successful login the
 * browser gets a cookie bound to the account by an HMAC under the pepper. Attempts that present it are exempt from
 * the per-account slow-down, so an attacker guessing from elsewhere cannot keep the owner out.
 */
export function newDeviceToken(pepper: Buffer, email: string): string {
  const nonce = randomBytes(16).toString("base64url");
  return `${nonce}.${mac(pepper, email, nonce)}`;
}

export function isDeviceTokenFor(pepper: Buffer, email: string, token: string | undefined): boolean {
  if (!token) return false;
  const [nonce, tag, extra] = token.split(".");
  if (!nonce || !tag || extra !== undefined) return false;
  const expected = Buffer.from(mac(pepper, email, nonce), "base64url");
  const given = Buffer.from(tag, "base64url");
  return given.length === expected.length && timingSafeEqual(given, expected);
}

function mac(pepper: Buffer, email: string, nonce: string): string {
  return createHmac("sha256", pepper).update(`device\0${email}\0${nonce}`).digest("base64url");
}
