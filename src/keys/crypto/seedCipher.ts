import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto";

const PREFIX = "v1:";

/**
 * TOTP seeds at rest: AES-256-GCM under a key kept outside the database (LIGHTFLEET_KEYS_SEED_KEY, or a file in the
 * data directory), so a copy of the database alone yields no second factors. Stored as `v1:<iv>.<ciphertext>.<tag>`.
 */
export class SeedCipher {
  private readonly key: Buffer;

  constructor(secret: Buffer) {
    // Any length of secret material becomes one 256-bit key.
    this.key = createHash("sha256").update("lightfleet totp seed key\0").update(secret).digest();
  }

  seal(seed: string, userId: number): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv("aes-256-gcm", this.key, iv);
    // The account id as associated data: a sealed seed copied onto another account does not open.
    cipher.setAAD(Buffer.from(String(userId)));
    const body = Buffer.concat([cipher.update(seed, "utf8"), cipher.final()]);
    return `${PREFIX}${[iv, body, cipher.getAuthTag()].map((b) => b.toString("base64url")).join(".")}`;
  }

  /** The seed, or undefined when it does not open (another key, tampered); a legacy clear seed is returned as is. */
  open(stored: string, userId: number): string | undefined {
    if (!stored.startsWith(PREFIX)) return stored;
    const [iv, body, tag] = stored.slice(PREFIX.length).split(".");
    if (!iv || !body || !tag) return undefined;
    try {
      const decipher = createDecipheriv("aes-256-gcm", this.key, Buffer.from(iv, "base64url"));
      decipher.setAAD(Buffer.from(String(userId)));
      decipher.setAuthTag(Buffer.from(tag, "base64url"));
      return Buffer.concat([decipher.update(Buffer.from(body, "base64url")), decipher.final()]).toString(
        "utf8",
      );
    } catch {
      return undefined;
    }
  }

  static isSealed(stored: string): boolean {
    return stored.startsWith(PREFIX);
  }
}
