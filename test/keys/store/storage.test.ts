import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { generateSync } from "otplib";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { KeysService } from "../../../src/keys/service.js";
import { openKeyStore } from "../../../src/keys/store/database.js";
import { Client, PEPPER, SEED_KEY, startPostgres, startTestKeysApi } from "../support.js";

const PASSWORD = "correct horse battery staple";
const cleanup: Array<() => unknown> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

async function sqliteService(clock: () => number = Date.now, seedKey = SEED_KEY) {
  const dir = mkdtempSync(join(tmpdir(), "lightfleet-keys-storage-"));
  cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
  const store = await openKeyStore(undefined, dir);
  cleanup.push(() => store.close());
  const service = new KeysService({
    store,
    pepper: Buffer.from(PEPPER),
    seedKey: Buffer.from(seedKey),
    clock,
  });
  return { dir, store, service };
}

describe("key store at rest", () => {
  it("creates keys.sqlite and the generated secrets owner-only (0600)", async () => {
    const started = await startTestKeysApi({ env: {} });
    cleanup.push(() => started.stop());
    for (const file of ["keys.sqlite", "keys-pepper", "keys-seed-key"])
      expect((statSync(join(started.dataDir, file)).mode & 0o777).toString(8), file).toBe("600");
  });

  it("keeps TOTP seeds encrypted under the seed key, bound to their account", async () => {
    const { store, service } = await sqliteService();
    await service.addUser("seed@example.org", PASSWORD);
    await service.addUser("other@example.org", PASSWORD);
    const { secret } = await service.enableTwoFactor("seed@example.org");
    const rows = await store.db.selectFrom("users").selectAll().execute();
    const stored = rows.find((r) => r.email === "seed@example.org")!.totp_secret!;
    expect(stored).toMatch(/^v1:/);
    expect(JSON.stringify(rows)).not.toContain(secret);

    const { token } = await service.login("seed@example.org", PASSWORD, "10.0.0.1");
    await expect(
      service.completeTwoFactor(token, { code: generateSync({ secret }) }, "10.0.0.1"),
    ).resolves.toMatchObject({
      token: expect.any(String),
    });
    // The sealed seed copied onto another account does not open there.
    await store.db
      .updateTable("users")
      .set({ totp_secret: stored })
      .where("email", "=", "other@example.org")
      .execute();
    const other = await service.login("other@example.org", PASSWORD, "10.0.0.2");
    await expect(
      service.completeTwoFactor(other.token, { code: generateSync({ secret }) }, "10.0.0.2"),
    ).rejects.toMatchObject({ code: "invalid-two-factor-token" });
  });

  it("does not open seeds under another seed key, and seals seeds left in clear by earlier releases", async () => {
    const { store, service } = await sqliteService();
    await service.addUser("legacy@example.org", PASSWORD);
    await store.db.updateTable("users").set({ totp_secret: "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP" }).execute();
    expect(await service.sealClearSeeds()).toBe(1);
    expect(await service.sealClearSeeds()).toBe(0);
    const sealed = (await store.db.selectFrom("users").select("totp_secret").executeTakeFirstOrThrow())
      .totp_secret!;
    expect(sealed).toMatch(/^v1:/);
    const { token } = await service.login("legacy@example.org", PASSWORD, "10.0.0.1");
    const code = generateSync({ secret: "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP" });
    const wrongKey = new KeysService({
      store,
      pepper: Buffer.from(PEPPER),
      seedKey: Buffer.from("another-seed-key-0123456789abcdef0123"),
    });
    await expect(wrongKey.completeTwoFactor(token, { code }, "10.0.0.1")).rejects.toMatchObject({
      code: "invalid-two-factor-token",
    });
    await expect(service.completeTwoFactor(token, { code }, "10.0.0.1")).resolves.toMatchObject({
      token: expect.any(String),
    });
  });

  it("drops ended throttle windows, and audit entries past their retention (strangers' sooner)", async () => {
    let now = Date.UTC(2026, 0, 1);
    const { store, service } = await sqliteService(() => now);
    await service.addUser("kept@example.org", PASSWORD);
    await expect(service.login("kept@example.org", "wrong", "10.0.0.1")).rejects.toThrow();
    await expect(service.login("nobody-1@example.org", "wrong", "10.0.0.1")).rejects.toThrow();
    const count = async (table: "audit" | "throttle") =>
      Number(
        (
          await store.db
            .selectFrom(table)
            .select((eb) => eb.fn.countAll<number>().as("n"))
            .executeTakeFirstOrThrow()
        ).n,
      );
    expect(await count("throttle")).toBeGreaterThan(0);
    now += 16 * 60_000;
    expect((await service.prune()).throttle).toBeGreaterThan(0);
    expect(await count("throttle")).toBe(0);
    now += 8 * 86_400_000;
    await service.prune();
    const left = await service.listAudit();
    expect(left.map((e) => e.email)).toEqual(["kept@example.org", "kept@example.org"]);
    now += 90 * 86_400_000;
    await service.prune();
    expect(await count("audit")).toBe(0);
  });
});

describe("key API on PostgreSQL without shared secrets", () => {
  let postgres: Awaited<ReturnType<typeof startPostgres>> | undefined;
  afterAll(async () => {
    await postgres?.stop();
  });

  it("refuses to start without LIGHTFLEET_KEYS_PEPPER and LIGHTFLEET_KEYS_SEED_KEY, and starts with them", async () => {
    postgres = await startPostgres();
    await postgres.createDatabase("secrets");
    const url = postgres.url("secrets");
    await expect(
      startTestKeysApi({ databaseUrl: url, env: { LIGHTFLEET_KEYS_PEPPER: PEPPER } }),
    ).rejects.toThrow(/LIGHTFLEET_KEYS_SEED_KEY must be set when the key store is PostgreSQL/);
    await expect(startTestKeysApi({ databaseUrl: url, env: {} })).rejects.toThrow(
      /LIGHTFLEET_KEYS_PEPPER and LIGHTFLEET_KEYS_SEED_KEY/,
    );
    const started = await startTestKeysApi({ databaseUrl: url });
    cleanup.push(() => started.stop());
    expect((await new Client(started.api.url).request("GET", "/v1/user/me")).status).toBe(401);
  });
});
