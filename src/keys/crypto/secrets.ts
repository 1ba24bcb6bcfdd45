import { createHash, createHmac, randomBytes, randomInt, timingSafeEqual } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";

/** Access key ids: "LFAK" and 16 base32 characters (20 in all), recognisable in logs and configs as AWS's AKIA are. */
export const ACCESS_KEY_PREFIX = "LFAK";
/** Secrets carry their own prefix so leaked ones can be found by secret scanners. */
export const SECRET_PREFIX = "lfsk_";
const BASE32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

export const ACCESS_KEY_ID = /^LFAK[A-Z2-7]{16}$/;

export function newAccessKeyId(): string {
  let id = ACCESS_KEY_PREFIX;
  for (let i = 0; i < 16; i++) id += BASE32[randomInt(32)];
  return id;
}

/** 256 random bits. */
export function newSecret(): string {
  return SECRET_PREFIX + randomBytes(32).toString("base64url");
}

/** What is stored of a secret: an HMAC under the server's pepper, so a database leak alone reveals nothing usable. */
export function secretHash(pepper: Buffer, secret: string): string {
  return createHmac("sha256", pepper).update(secret).digest("hex");
}

export function sameHash(a: string, b: string): boolean {
  const x = Buffer.from(a, "hex");
  const y = Buffer.from(b, "hex");
  return x.length === y.length && timingSafeEqual(x, y);
}

/** Session cookies are random; the database holds their SHA-256 only. */
export function newSessionToken(): string {
  return randomBytes(32).toString("base64url");
}

export function tokenHash(token: string): string {
  return createHash("sha256").update(token).digest("hex");
}

/** A server secret: from the environment when set (at least 32 characters), else a random one kept in a file. */
export interface ServerSecret {
  value: Buffer;
  /** The file it was kept in when it did not come from the environment. */
  generated: string | undefined;
}

function loadSecret(
  env: NodeJS.ProcessEnv,
  variable: string,
  dataDir: string,
  fileName: string,
): ServerSecret {
  const fromEnv = env[variable];
  if (fromEnv !== undefined) {
    if (fromEnv.length < 32) throw new Error(`${variable} must be at least 32 characters`);
    return { value: Buffer.from(fromEnv, "utf8"), generated: undefined };
  }
  const file = join(resolve(dataDir), fileName);
  if (!existsSync(file)) {
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, randomBytes(32).toString("base64url"), { mode: 0o600, flag: "wx" });
  }
  return { value: Buffer.from(readFileSync(file, "utf8").trim(), "utf8"), generated: file };
}

/**
 * The server's two secrets: the pepper of the secret hashes (LIGHTFLEET_KEYS_PEPPER) and the key TOTP seeds are
 * encrypted under (LIGHTFLEET_KEYS_SEED_KEY). Without the variables each is a random one kept in the data directory,
 * which suits one host (`up`) but not replicas sharing a database: those refuse to start without them.
 */
export function loadServerSecrets(
  env: NodeJS.ProcessEnv,
  dataDir: string,
): { pepper: ServerSecret; seedKey: ServerSecret } {
  return {
    pepper: loadSecret(env, "LIGHTFLEET_KEYS_PEPPER", dataDir, "keys-pepper"),
    seedKey: loadSecret(env, "LIGHTFLEET_KEYS_SEED_KEY", dataDir, "keys-seed-key"),
  };
}
