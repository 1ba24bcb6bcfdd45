import { generateSync } from "otplib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Client, startPostgres, startTestKeysApi } from "./support.js";

const PASSWORD = "correct horse battery staple";
type Started = Awaited<ReturnType<typeof startTestKeysApi>>;

/**
 * The owner is never locked out by guessing from many addresses: from a browser that never logged in before, and from
 * an address of its own, the right credentials get in at once while the account is slowed down, and the guessers'
 * attempts stay slowed. On each store; on PostgreSQL through two replicas sharing the database.
 */
function ownerDuringAttack(storeName: string, databaseUrl: () => Promise<string | undefined>) {
  // Every guess before the slow-down, and each checked one after, is a real scrypt check (about 0.5 s of a core).
  describe(
    `the owner during a guessing attack from many addresses on ${storeName}`,
    { timeout: 180_000 },
    () => {
      let replicas: Started[] = [];
      let now = Date.UTC(2026, 10, 27, 9, 0, 0);
      beforeAll(async () => {
        const url = await databaseUrl();
        const count = url ? 2 : 1;
        for (let i = 0; i < count; i++)
          replicas.push(
            await startTestKeysApi({ ...(url ? { databaseUrl: url } : {}), trustProxy: 1, clock: () => now }),
          );
      });
      afterAll(async () => {
        for (const r of replicas) await r.stop();
        replicas = [];
      });

      const base = (i: number) => replicas[i % replicas.length]!.api.url;
      const login = (i: number, body: Record<string, string>, ip: string) =>
        new Client(base(i), ip).request("POST", "/v1/user/login", body);

      /** Wrong passwords from a new address each, a second apart, through every replica in turn. */
      const attack = async (email: string, tries: number, from: number) => {
        const statuses: number[] = [];
        for (let i = 0; i < tries; i++) {
          now += 1_000;
          const r = await login(i, { email, password: `guess ${i}`, token: "123456" }, `198.51.${from}.${i}`);
          statuses.push(r.status);
        }
        return statuses;
      };

      it("lets the right password in from a new browser and address at once, while guesses are slowed", async () => {
        const email = "plain@example.org";
        await replicas[0]!.api.service.addUser(email, PASSWORD);
        const guesses = await attack(email, 14, 1);
        // The slow-down is on: past its threshold no guess is answered 401 (a checked wrong one is answered 429 too).
        expect(guesses.slice(12).every((s) => s === 429)).toBe(true);
        const owner = await login(1, { email, password: PASSWORD }, "192.0.2.77");
        expect(owner.status).toBe(200);
        expect(owner.body).toEqual({ twoFactorRequired: false });
        // The guessers are still slowed after the owner's success.
        expect((await attack(email, 3, 2)).every((s) => s === 429)).toBe(true);
      });

      it("lets the password with a current code in at once on a two-factor account; a guess with any code stays 429", async () => {
        const email = "strong@example.org";
        await replicas[0]!.api.service.addUser(email, PASSWORD);
        const { secret } = await replicas[0]!.api.service.enableTwoFactor(email);
        const guesses = await attack(email, 14, 3);
        expect(guesses.slice(12).every((s) => s === 429)).toBe(true);
        const code = generateSync({ secret, epoch: Math.floor(now / 1000) });
        const owner = new Client(base(1), "192.0.2.78");
        const res = await owner.request("POST", "/v1/user/login", { email, password: PASSWORD, token: code });
        expect(res.status).toBe(200);
        // Both factors at once: the session is complete.
        expect(res.body).toEqual({ twoFactorRequired: false });
        expect((await owner.request("GET", "/v1/user/keys")).status).toBe(200);
        // Without the code, a slowed two-factor account checks no password at all.
        expect((await login(0, { email, password: PASSWORD }, "192.0.2.79")).status).toBe(429);
        expect((await attack(email, 3, 4)).every((s) => s === 429)).toBe(true);
        const audit = await replicas[0]!.api.service.listAudit({ email, limit: 200 });
        expect(audit.find((e) => e.event === "login")!.detail).toMatch(/ip 192\.0\.2\.78.*both factors/);
      });

      it("lets the owner in while guesses arrive at the same moment through every replica", async () => {
        const email = "busy@example.org";
        await replicas[0]!.api.service.addUser(email, PASSWORD);
        await attack(email, 12, 5);
        const burst = Promise.all(
          Array.from({ length: 12 }, (_, i) =>
            login(i, { email, password: `burst ${i}` }, `203.0.113.${i}`).then((r) => r.status),
          ),
        );
        const owner = await login(1, { email, password: PASSWORD }, "192.0.2.80");
        const statuses = await burst;
        expect(owner.status).toBe(200);
        expect(statuses.filter((s) => s === 401)).toHaveLength(0);
      });
    },
  );
}

let postgres: Awaited<ReturnType<typeof startPostgres>> | undefined;
afterAll(async () => {
  await postgres?.stop();
});

ownerDuringAttack("SQLite", () => Promise.resolve(undefined));
ownerDuringAttack("PostgreSQL with two replicas", async () => {
  postgres ??= await startPostgres();
  await postgres.createDatabase("lockout");
  return postgres.url("lockout");
});
