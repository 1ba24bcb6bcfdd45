import { generateSync } from "otplib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Client, startPostgres, startTestKeysApi } from "./support.js";

const PASSWORD = "correct horse battery staple";
const SETUP = "/v1/user/twofactor/setup";
const CONFIRM = "/v1/user/twofactor/confirm";

/**
 * Turning two-factor authentication on from a session asks for the password (so a hijacked session cannot enrol the
 * hijacker's authenticator), ends the account's other sessions, is audited, and hands out recovery codes: shown once,
 * hashed at rest, each a way in once when the authenticator is lost.
 */
function twoFactorOn(storeName: string, databaseUrl: () => Promise<string | undefined>) {
  describe(`turning two-factor on from the page on ${storeName}`, { timeout: 120_000 }, () => {
    let started: Awaited<ReturnType<typeof startTestKeysApi>>;
    let now = Date.UTC(2026, 10, 27, 11, 0, 0);
    beforeAll(async () => {
      const url = await databaseUrl();
      started = await startTestKeysApi({ ...(url ? { databaseUrl: url } : {}), clock: () => now });
    });
    afterAll(async () => {
      await started?.stop();
    });

    const loggedIn = async (email: string) => {
      const client = new Client(started.api.url);
      await client.request("POST", "/v1/user/login", { email, password: PASSWORD });
      return client;
    };
    const events = async (email: string) => started.api.service.listAudit({ email, limit: 50 });

    it("asks for the password before a new seed is made, and audits a wrong one", async () => {
      await started.api.service.addUser("ask@example.org", PASSWORD);
      const client = await loggedIn("ask@example.org");
      const bare = await client.request("POST", SETUP, {});
      expect(bare.status).toBe(400);
      expect(bare.body.code).toBe("invalid-body");
      const wrong = await client.request("POST", SETUP, { currentPassword: "not the password" });
      expect(wrong.status).toBe(401);
      expect(wrong.body.code).toBe("invalid-credentials");
      expect((await events("ask@example.org"))[0]).toMatchObject({
        event: "two-factor-enable-failed",
        detail: expect.stringMatching(/ip .*wrong password/),
      });
      const right = await client.request("POST", SETUP, { currentPassword: PASSWORD });
      expect(right.status).toBe(200);
      expect(right.body.secret).toEqual(expect.any(String));
    });

    it("ends every other session on confirmation, audits it, and shows ten recovery codes once, kept hashed", async () => {
      await started.api.service.addUser("on@example.org", PASSWORD);
      const mine = await loggedIn("on@example.org");
      const other = await loggedIn("on@example.org");
      const { secret } = (await mine.request("POST", SETUP, { currentPassword: PASSWORD })).body;
      const res = await mine.request("POST", CONFIRM, { token: generateSync({ secret, epoch: now / 1000 }) });
      expect(res.status).toBe(200);
      const codes = res.body.recoveryCodes as string[];
      expect(codes).toHaveLength(10);
      expect(new Set(codes).size).toBe(10);
      expect((await mine.request("GET", "/v1/user/me")).body).toMatchObject({ twoFactor: true });
      expect((await other.request("GET", "/v1/user/me")).status).toBe(401);
      expect((await events("on@example.org"))[0]).toMatchObject({
        event: "two-factor-enabled",
        detail: expect.stringMatching(/ip .*1 other session ended/),
      });
      const stored = JSON.stringify(
        await started.api.store.db.selectFrom("recovery_codes").selectAll().execute(),
      );
      for (const code of codes) expect(stored).not.toContain(code);
    });

    it("lets a recovery code stand in for a lost authenticator, once", async () => {
      await started.api.service.addUser("lost@example.org", PASSWORD);
      const setupClient = await loggedIn("lost@example.org");
      const { secret } = (await setupClient.request("POST", SETUP, { currentPassword: PASSWORD })).body;
      now += 30_000;
      const { recoveryCodes } = (
        await setupClient.request("POST", CONFIRM, { token: generateSync({ secret, epoch: now / 1000 }) })
      ).body as { recoveryCodes: string[] };
      const [first, second] = recoveryCodes;

      const phoneLost = await loggedIn("lost@example.org");
      const used = await phoneLost.request("POST", "/v1/user/login/twofactor", { recoveryCode: first });
      expect(used.status).toBe(200);
      expect((await phoneLost.request("GET", "/v1/user/keys")).status).toBe(200);
      expect((await events("lost@example.org"))[0]).toMatchObject({
        event: "two-factor",
        detail: expect.stringMatching(/recovery code, 9 left/),
      });

      const again = await loggedIn("lost@example.org");
      const reused = await again.request("POST", "/v1/user/login/twofactor", { recoveryCode: first });
      expect(reused.status).toBe(401);
      expect(reused.body.code).toBe("invalid-two-factor-token");
      // Typed with spaces and in capitals, a code still counts.
      const typed = second!.toUpperCase().replace("-", " ");
      expect((await again.request("POST", "/v1/user/login/twofactor", { recoveryCode: typed })).status).toBe(
        200,
      );
    });
  });
}

let postgres: Awaited<ReturnType<typeof startPostgres>> | undefined;
afterAll(async () => {
  await postgres?.stop();
});

twoFactorOn("SQLite", () => Promise.resolve(undefined));
twoFactorOn("PostgreSQL", async () => {
  postgres ??= await startPostgres();
  await postgres.createDatabase("twofactoron");
  return postgres.url("twofactoron");
});
