import { mkdtempSync, rmSync } from "node:fs";
import { scryptSync } from "node:crypto";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { hashPassword, needsRehash, verifyPassword } from "../../../src/keys/crypto/passwords.js";
import { KeysService } from "../../../src/keys/service.js";
import { openKeyStore } from "../../../src/keys/store/database.js";
import { PEPPER, SEED_KEY } from "../support.js";

/** A hash as the first releases made them (N=2^15, r=8, p=1). */
function oldHash(password: string): string {
  const salt = Buffer.from("0123456789abcdef");
  const key = scryptSync(password.normalize("NFKC"), salt, 32, {
    N: 32_768,
    r: 8,
    p: 1,
    maxmem: 64 * 1024 * 1024,
  });
  return ["scrypt", 32_768, 8, 1, salt.toString("base64url"), key.toString("base64url")].join("$");
}

const cleanup: Array<() => unknown> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

describe("password hashing", () => {
  it("hashes with scrypt at an OWASP setting (N=2^15, r=8, p=3) and a random salt, and verifies only the password", async () => {
    const a = await hashPassword("correct horse battery staple");
    const b = await hashPassword("correct horse battery staple");
    expect(a).toMatch(/^scrypt\$32768\$8\$3\$[\w-]{22}\$[\w-]{43}$/);
    expect(a).not.toBe(b);
    expect(await verifyPassword("correct horse battery staple", a)).toBe(true);
    expect(await verifyPassword("correct horse battery stapl", a)).toBe(false);
    expect(await verifyPassword("x", "not-a-hash")).toBe(false);
    expect(needsRehash(a)).toBe(false);
  });

  it("still verifies a hash made with older parameters, which it marks for re-hashing", async () => {
    const old = oldHash("hunter2hunter2");
    expect(await verifyPassword("hunter2hunter2", old)).toBe(true);
    expect(needsRehash(old)).toBe(true);
  });

  it("replaces an old hash at the next successful login, not at a failed one", async () => {
    const dir = mkdtempSync(join(tmpdir(), "lightfleet-passwords-"));
    cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
    const store = await openKeyStore(undefined, dir);
    cleanup.push(() => store.close());
    const service = new KeysService({ store, pepper: Buffer.from(PEPPER), seedKey: Buffer.from(SEED_KEY) });
    await service.addUser("old@example.org", "hunter2hunter2");
    const old = oldHash("hunter2hunter2");
    await store.db.updateTable("users").set({ password_hash: old }).execute();
    const stored = async () =>
      (await store.db.selectFrom("users").select("password_hash").executeTakeFirstOrThrow()).password_hash;

    await expect(service.login("old@example.org", "wrong-password", "10.0.0.1")).rejects.toThrow();
    expect(await stored()).toBe(old);
    await service.login("old@example.org", "hunter2hunter2", "10.0.0.1");
    const now = await stored();
    expect(now).toMatch(/^scrypt\$32768\$8\$3\$/);
    expect(await verifyPassword("hunter2hunter2", now)).toBe(true);
    await service.login("old@example.org", "hunter2hunter2", "10.0.0.1");
    expect(await stored()).toBe(now);
  });
});
