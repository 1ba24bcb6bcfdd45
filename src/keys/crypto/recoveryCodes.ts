import { randomInt } from "node:crypto";
import { secretHash } from "./secrets.js";

/** Recovery codes handed out when two-factor authentication is turned on: each a way in, once, without the app. */
export const RECOVERY_CODE_COUNT = 10;

const ALPHABET = "abcdefghijklmnopqrstuvwxyz234567";

/** Ten characters of base32 each (50 random bits: far beyond online guessing), shown as `xxxxx-xxxxx`. */
export function newRecoveryCodes(count = RECOVERY_CODE_COUNT): string[] {
  return Array.from({ length: count }, () => {
    let code = "";
    for (let i = 0; i < 10; i++) code += ALPHABET[randomInt(32)];
    return `${code.slice(0, 5)}-${code.slice(5)}`;
  });
}

/** As typed: capitals, spaces and hyphens do not matter. */
export function normalizeRecoveryCode(input: string): string {
  return input.toLowerCase().replace(/[\s-]/g, "");
}

/** What is stored of a code: an HMAC under the pepper, like key secrets, so a database copy yields no way in. */
export function recoveryCodeHash(pepper: Buffer, code: string): string {
  return secretHash(pepper, `recovery\0${normalizeRecoveryCode(code)}`);
}
