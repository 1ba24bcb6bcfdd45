import { generateSync } from "otplib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Client, startPostgres, startTestKeysApi } from "./support.js";

const PASSWORD = "correct horse battery staple";
type Started = Awaited<ReturnType<typeof startTestKeysApi>>;

/**
 * The second factor's budget (5 codes in 15 minutes) stops guessing, but neither a replayed valid code nor someone
 * who has only the password can use it up for the owner. On each store; on PostgreSQL through two replicas.
 */
function codeBudget(storeName: string, databaseUrl: () => Promise<string | undefined>) {
  describe(`the two-factor budget on ${storeName}`, { timeout: 120_000 }, () => {
    let replicas: Started[] = [];
    let now = Date.UTC(2026, 10, 27, 10, 0, 0);
    beforeAll(async () => {
      const url = await databaseUrl();
      for (let i = 0; i < (url ? 2 : 1); i++)
        replicas.push(await startTestKeysApi({ ...(url ? { databaseUrl: url } : {}), clock: () => now }));
    });
    afterAll(async () => {
      for (const r of replicas) await r.stop();
      replicas = [];
    });
    const base = (i: number) => replicas[i % replicas.length]!.api.url;
    const code = (secret: string) => generateSync({ secret, epoch: Math.floor(now / 1000) });

    const halfLogin = async (email: string, i = 0) => {
      const client = new Client(base(i));
      expect((await client.request("POST", "/v1/user/login", { email, password: PASSWORD })).body).toEqual({
        twoFactorRequired: true,
      });
      return client;
    };

    it("does not count replays of a valid code as guesses: the next right code still gets in", async () => {
      const email = "replay@example.org";
      await replicas[0]!.api.service.addUser(email, PASSWORD);
      const { secret } = await replicas[0]!.api.service.enableTwoFactor(email);
      const used = code(secret);
      const first = await halfLogin(email);
      expect((await first.request("POST", "/v1/user/login/twofactor", { token: used })).status).toBe(200);
      const pending = await halfLogin(email, 1);
      const replays = await Promise.all(
        Array.from({ length: 20 }, (_, i) => {
          const c = new Client(base(i));
          c.cookie = pending.cookie;
          return c.request("POST", "/v1/user/login/twofactor", { token: used });
        }),
      );
      expect(replays.map((r) => r.status)).toEqual(Array(20).fill(401));
      expect(replays.every((r) => r.body.code === "invalid-two-factor-token")).toBe(true);
      now += 30_000;
      expect(
        (await pending.request("POST", "/v1/user/login/twofactor", { token: code(secret) })).status,
      ).toBe(200);
    });

    it("lets the owner's browser in with the right code while someone with the password has spent the budget", async () => {
      const email = "blocked@example.org";
      await replicas[0]!.api.service.addUser(email, PASSWORD);
      const { secret } = await replicas[0]!.api.service.enableTwoFactor(email);
      // The owner logged in fully from this browser before: it holds the device cookie.
      now += 30_000;
      const owner = new Client(base(0));
      const full = await owner.request("POST", "/v1/user/login", {
        email,
        password: PASSWORD,
        token: code(secret),
      });
      expect(full.body).toEqual({ twoFactorRequired: false });
      const device = /lf_device=[^;]+/.exec(full.headers.get("set-cookie") ?? "")?.[0];
      expect(device).toBeTruthy();

      // Someone with the password: 20 wrong codes through both replicas; 5 are checked, the rest refused.
      const thief = await halfLogin(email, 1);
      const statuses: number[] = [];
      for (let i = 0; i < 20; i++) {
        const c = new Client(base(i));
        c.cookie = thief.cookie;
        statuses.push((await c.request("POST", "/v1/user/login/twofactor", { token: "000000" })).status);
      }
      expect(statuses.filter((s) => s === 401)).toHaveLength(5);
      expect(statuses.filter((s) => s === 429)).toHaveLength(15);
      // The password alone earned no device cookie, so the thief is held to the spent budget, right code or not.
      now += 30_000;
      const c = new Client(base(0));
      c.cookie = thief.cookie;
      expect((await c.request("POST", "/v1/user/login/twofactor", { token: code(secret) })).status).toBe(429);

      // The owner's browser, on either replica, gets in with the right code at once.
      now += 30_000;
      const again = new Client(base(1));
      again.cookie = device;
      const res = await again.request("POST", "/v1/user/login", {
        email,
        password: PASSWORD,
        token: code(secret),
      });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ twoFactorRequired: false });
    });
  });
}

let postgres: Awaited<ReturnType<typeof startPostgres>> | undefined;
afterAll(async () => {
  await postgres?.stop();
});

codeBudget("SQLite", () => Promise.resolve(undefined));
codeBudget("PostgreSQL with two replicas", async () => {
  postgres ??= await startPostgres();
  await postgres.createDatabase("budget");
  return postgres.url("budget");
});
