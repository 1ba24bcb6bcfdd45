import fc from "fast-check";
import { generateSync } from "otplib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Client, startPostgres, startTestKeysApi } from "./support.js";

const PASSWORD = "correct horse battery staple";

type Started = Awaited<ReturnType<typeof startTestKeysApi>>;

/** The contract table of DESIGN.md, run on each store. */
function contract(storeName: string, databaseUrl: () => Promise<string | undefined>) {
  describe(`key API contract on ${storeName}`, () => {
    let started: Started;
    let now = Date.UTC(2026, 10, 22, 12, 0, 0);
    let base: string;
    let totpSecret: string;

    beforeAll(async () => {
      const url = await databaseUrl();
      started = await startTestKeysApi({ ...(url ? { databaseUrl: url } : {}), clock: () => now });
      base = started.api.url;
      await started.api.service.addUser("alice@example.org", PASSWORD);
      await started.api.service.addUser("bob@example.org", PASSWORD);
      await started.api.service.addUser("carol@example.org", PASSWORD);
      totpSecret = (await started.api.service.enableTwoFactor("carol@example.org")).secret;
    });
    afterAll(async () => {
      await started?.stop();
    });

    const loggedIn = async (email: string, ip = "127.0.0.1") => {
      const client = new Client(base, ip);
      const res = await client.request("POST", "/v1/user/login", { email, password: PASSWORD });
      expect(res.status).toBe(200);
      return client;
    };

    it("logs in with a session cookie that is HttpOnly and SameSite=Strict", async () => {
      const client = new Client(base);
      const res = await client.request("POST", "/v1/user/login", {
        email: "Alice@Example.org",
        password: PASSWORD,
      });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ twoFactorRequired: false });
      expect(res.setCookie).toMatch(/^lf_session=[\w-]{43}; Path=\/; HttpOnly; SameSite=Strict$/);
    });

    it("answers a wrong password and an unknown email alike: 401, same body, WWW-Authenticate", async () => {
      const wrong = await new Client(base).request("POST", "/v1/user/login", {
        email: "alice@example.org",
        password: "nope-nope-nope",
      });
      const unknown = await new Client(base).request("POST", "/v1/user/login", {
        email: "nobody@example.org",
        password: "nope-nope-nope",
      });
      expect(wrong.status).toBe(401);
      expect(unknown.status).toBe(401);
      expect(unknown.body).toEqual(wrong.body);
      expect(wrong.body).toMatchObject({ code: "invalid-credentials", status: 401 });
      expect(wrong.headers.get("content-type")).toMatch(/^application\/problem\+json/);
      expect(wrong.headers.get("www-authenticate")).toMatch(/realm=/);
    });

    it("creates, lists (with the pair's own headers) and deletes key pairs; at most two active", async () => {
      const client = await loggedIn("alice@example.org");
      const first = await client.request("POST", "/v1/keys/");
      expect(first.status).toBe(201);
      expect(first.body).toEqual({
        accessKeyId: expect.stringMatching(/^LFAK[A-Z2-7]{16}$/),
        secretKey: expect.stringMatching(/^lfsk_[\w-]{43}$/),
        status: "Active",
        createdAt: new Date(now).toISOString(),
      });
      const second = await client.request("POST", "/v1/keys/", {});
      expect(second.status).toBe(201);
      const third = await client.request("POST", "/v1/keys/");
      expect(third.status).toBe(409);
      expect(third.body).toMatchObject({
        code: "key-limit-exceeded",
        limit: 2,
        detail: "Cannot exceed quota for AccessKeysPerUser: 2",
      });

      now += 60_000;
      const list = await new Client(base).request("GET", "/v1/keys/", undefined, {
        "x-access-key-id": first.body.accessKeyId,
        "x-secret-key": first.body.secretKey,
      });
      expect(list.status).toBe(200);
      expect(list.body.keys).toEqual([
        {
          accessKeyId: first.body.accessKeyId,
          status: "Active",
          createdAt: first.body.createdAt,
          lastUsedAt: new Date(now).toISOString(),
        },
        {
          accessKeyId: second.body.accessKeyId,
          status: "Active",
          createdAt: second.body.createdAt,
          lastUsedAt: null,
        },
      ]);
      // Within a minute lastUsedAt stays (no write per request); after it, it moves.
      const usedAt = new Date(now).toISOString();
      const listAgain = async () =>
        (
          await new Client(base).request("GET", "/v1/keys/", undefined, {
            "x-access-key-id": first.body.accessKeyId,
            "x-secret-key": first.body.secretKey,
          })
        ).body.keys[0].lastUsedAt;
      now += 59_000;
      expect(await listAgain()).toBe(usedAt);
      now += 1_000;
      expect(await listAgain()).toBe(new Date(now).toISOString());

      // Someone else's key is as unknown as a missing one.
      const bob = await loggedIn("bob@example.org");
      expect((await bob.request("DELETE", `/v1/keys/${first.body.accessKeyId}`)).status).toBe(404);
      expect((await client.request("DELETE", `/v1/keys/${first.body.accessKeyId}`)).status).toBe(204);
      expect((await client.request("DELETE", `/v1/keys/${first.body.accessKeyId}`)).status).toBe(404);
      // A deleted pair no longer authenticates; a free slot allows a new pair.
      const gone = await new Client(base).request("GET", "/v1/keys/", undefined, {
        "x-access-key-id": first.body.accessKeyId,
        "x-secret-key": first.body.secretKey,
      });
      expect(gone.status).toBe(401);
      expect((await client.request("POST", "/v1/keys/")).status).toBe(201);
    });

    it("answers an unknown key id and a wrong secret alike (401, same body)", async () => {
      const client = await loggedIn("bob@example.org");
      const pair = (await client.request("POST", "/v1/keys/")).body;
      const unknown = await new Client(base).request("GET", "/v1/keys/", undefined, {
        "x-access-key-id": "LFAKAAAAAAAAAAAAAAAA",
        "x-secret-key": pair.secretKey,
      });
      const wrong = await new Client(base).request("GET", "/v1/keys/", undefined, {
        "x-access-key-id": pair.accessKeyId,
        "x-secret-key": "lfsk_wrong",
      });
      const missing = await new Client(base).request("GET", "/v1/keys/");
      for (const res of [unknown, wrong, missing]) {
        expect(res.status).toBe(401);
        expect(res.headers.get("www-authenticate")).toMatch(/^AccessKey /);
      }
      expect(unknown.body).toEqual(wrong.body);
    });

    it("never lets concurrent creates make a third active pair", async () => {
      await started.api.service.addUser(`race-${storeName}@example.org`, PASSWORD);
      const client = await loggedIn(`race-${storeName}@example.org`);
      const results = await Promise.all(
        Array.from({ length: 50 }, () => client.request("POST", "/v1/keys/")),
      );
      expect(results.filter((r) => r.status === 201)).toHaveLength(2);
      expect(results.filter((r) => r.status === 409)).toHaveLength(48);
      const user = await started.api.store.db
        .selectFrom("users")
        .select("id")
        .where("email", "=", `race-${storeName}@example.org`.toLowerCase())
        .executeTakeFirstOrThrow();
      const active = await started.api.store.db
        .selectFrom("key_pairs")
        .select("access_key_id")
        .where("user_id", "=", user.id)
        .execute();
      expect(active).toHaveLength(2);
    });

    it("holds key routes until the second factor; a code works once; the session id rotates", async () => {
      const client = await loggedIn("carol@example.org");
      const halfSession = client.cookie;
      expect((await client.request("POST", "/v1/keys/")).body).toMatchObject({
        status: 401,
        code: "two-factor-required",
      });
      const bad = await client.request("POST", "/v1/user/login/twofactor", { token: "000000" });
      expect(bad.status).toBe(401);
      const token = generateSync({ secret: totpSecret, epoch: Math.floor(now / 1000) });
      const ok = await client.request("POST", "/v1/user/login/twofactor", { token });
      expect(ok.status).toBe(200);
      expect(client.cookie).not.toBe(halfSession);
      expect((await client.request("POST", "/v1/keys/")).status).toBe(201);
      // The old (half) session id is dead, and the same code cannot be used again in another session.
      const stale = new Client(base);
      stale.cookie = halfSession;
      expect((await stale.request("POST", "/v1/keys/")).status).toBe(401);
      const other = await loggedIn("carol@example.org");
      expect((await other.request("POST", "/v1/user/login/twofactor", { token })).body.code).toBe(
        "invalid-two-factor-token",
      );
    });

    it("makes a session id from before login useless after it (no fixation)", async () => {
      const client = new Client(base);
      client.cookie = "lf_session=planted-by-an-attacker-0000000000000000000000";
      const planted = client.cookie;
      await client.request("POST", "/v1/user/login", { email: "bob@example.org", password: PASSWORD });
      expect(client.cookie).not.toBe(planted);
      const attacker = new Client(base);
      attacker.cookie = planted;
      expect((await attacker.request("POST", "/v1/keys/")).status).toBe(401);
    });

    it("answers fuzzed bodies (odd unicode, SQL metacharacters, wrong types) with 4xx only, and changes nothing", async () => {
      const before = await started.api.store.db
        .selectFrom("users")
        .select(["email", "password_hash"])
        .orderBy("email")
        .execute();
      const value = fc.oneof(
        fc.string(),
        fc.string({ unit: "binary" }),
        fc.constantFrom(
          "' OR 1=1 --",
          '"; DROP TABLE users; --',
          "alice@example.org' --",
          "\u0000",
          "𝔘𝔫𝔦𝔠𝔬𝔡𝔢",
          "\ud800",
        ),
        fc.integer(),
        fc.boolean(),
        fc.constant(null),
        fc.array(fc.string(), { maxLength: 3 }),
      );
      const body = fc.oneof(
        fc.record({ email: value, password: value }, { requiredKeys: [] }),
        fc.dictionary(fc.string({ maxLength: 8 }), value, { maxKeys: 4 }),
        value,
      );
      await fc.assert(
        fc.asyncProperty(
          fc.constantFrom("/v1/user/login", "/v1/user/login/twofactor", "/v1/keys/"),
          body,
          async (path, input) => {
            const res = await new Client(base, "10.9.9.9").request(
              "POST",
              path,
              JSON.stringify(input) ?? "null",
            );
            expect(res.status).toBeGreaterThanOrEqual(400);
            expect(res.status).toBeLessThan(500);
          },
        ),
        { numRuns: 150 },
      );
      const after = await started.api.store.db
        .selectFrom("users")
        .select(["email", "password_hash"])
        .orderBy("email")
        .execute();
      expect(after).toEqual(before);
    });

    it("ends sessions on logout, after the idle timeout and after the absolute timeout", async () => {
      const out = await loggedIn("bob@example.org");
      const cookie = out.cookie;
      expect((await out.request("POST", "/v1/user/logout")).status).toBe(204);
      const replay = new Client(base);
      replay.cookie = cookie;
      expect((await replay.request("POST", "/v1/keys/")).status).toBe(401);

      const idle = await loggedIn("alice@example.org");
      now += 31 * 60_000;
      expect((await idle.request("DELETE", "/v1/keys/LFAKAAAAAAAAAAAAAAAA")).status).toBe(401);

      // Kept busy, a session still ends 12 hours after login.
      const busy = await loggedIn("alice@example.org");
      const loginAt = now;
      const step = 29 * 60_000;
      while (now + step - loginAt <= 12 * 3_600_000) {
        now += step;
        expect((await busy.request("DELETE", "/v1/keys/LFAKAAAAAAAAAAAAAAAA")).status).toBe(404);
      }
      now += step;
      expect((await busy.request("DELETE", "/v1/keys/LFAKAAAAAAAAAAAAAAAA")).status).toBe(401);
    });

    it("throttles failed logins per account with Retry-After, and lets the window pass", async () => {
      const target = "alice@example.org";
      for (let i = 0; i < 5; i++)
        await new Client(base).request("POST", "/v1/user/login", { email: target, password: "wrong-wrong" });
      const throttled = await new Client(base).request("POST", "/v1/user/login", {
        email: target,
        password: PASSWORD,
      });
      expect(throttled.status).toBe(429);
      expect(Number(throttled.headers.get("retry-after"))).toBeGreaterThan(0);
      now += 16 * 60_000;
      expect(
        (await new Client(base).request("POST", "/v1/user/login", { email: target, password: PASSWORD }))
          .status,
      ).toBe(200);
    });

    it.each([
      ["a missing field", { email: "alice@example.org" }, 400],
      ["an unknown field", { email: "alice@example.org", password: PASSWORD, admin: true }, 400],
      ["a wrong type", { email: "alice@example.org", password: 5 }, 400],
      ["malformed JSON", "{", 400],
      ["a body over 16 KiB", { email: "alice@example.org", password: "x".repeat(20_000) }, 413],
    ])("refuses %s with a problem answer", async (_what, body, status) => {
      const res = await new Client(base).request("POST", "/v1/user/login", body);
      expect(res.status).toBe(status);
      expect(res.headers.get("content-type")).toMatch(/^application\/problem\+json/);
      expect(JSON.stringify(res.body)).not.toMatch(/at .*\.(js|ts):\d+/);
    });

    it("refuses other content types (415) and cross-site requests (403)", async () => {
      const res = await new Client(base).request("POST", "/v1/user/login", "email=a", {
        "content-type": "application/x-www-form-urlencoded",
      });
      expect(res.status).toBe(415);
      const cross = await new Client(base).request(
        "POST",
        "/v1/user/login",
        { email: "alice@example.org", password: PASSWORD },
        { origin: "https://evil.example" },
      );
      expect(cross.status).toBe(403);
      expect(cross.body.code).toBe("cross-site-request");
    });

    it("keeps passwords, secrets and session ids out of the log and the database", async () => {
      const client = await loggedIn("bob@example.org");
      const pair = (await client.request("POST", "/v1/keys/")).body;
      const log = started.logs.join("");
      expect(log).not.toContain(PASSWORD);
      expect(log).not.toContain(pair.secretKey);
      expect(log).not.toContain(client.cookie!.split("=")[1]);
      const rows = await started.api.store.db.selectFrom("key_pairs").selectAll().execute();
      expect(JSON.stringify(rows)).not.toContain(pair.secretKey);
      const users = await started.api.store.db.selectFrom("users").selectAll().execute();
      expect(JSON.stringify(users)).not.toContain(PASSWORD);
    });

    it("records logins, failed logins and key changes in the audit trail, without secrets", async () => {
      const dave = "dave@example.org";
      await started.api.service.addUser(dave, PASSWORD);
      const wrong = new Client(base);
      expect(
        (await wrong.request("POST", "/v1/user/login", { email: dave, password: "not it at all" })).status,
      ).toBe(401);
      const client = await loggedIn(dave);
      const pair = (await client.request("POST", "/v1/keys/")).body;
      expect((await client.request("DELETE", `/v1/keys/${pair.accessKeyId}`)).status).toBe(204);
      const events = await started.api.service.listAudit({ email: dave, limit: 10 });
      expect(events.map((e) => [e.event, e.detail])).toEqual([
        ["key-deleted", `${pair.accessKeyId}, ip 127.0.0.1`],
        ["key-created", `${pair.accessKeyId}, ip 127.0.0.1`],
        ["login", "ip 127.0.0.1"],
        ["login-failed", "ip 127.0.0.1"],
        ["user-added", "by cli"],
      ]);
      expect(events.every((e) => e.email === dave && e.at === new Date(now).toISOString())).toBe(true);
      const all = JSON.stringify(await started.api.store.db.selectFrom("audit").selectAll().execute());
      expect(all).not.toContain(pair.secretKey);
      expect(all).not.toContain(PASSWORD);
    });

    it("counts requests by route and status", async () => {
      const text = await started.registry.metrics();
      expect(text).toMatch(/lightfleet_keys_requests_total\{route="login",status="200"\} \d+/);
      expect(text).toMatch(/lightfleet_keys_requests_total\{route="create-key",status="409"\} \d+/);
    });
  });
}

contract("SQLite", () => Promise.resolve(undefined));

let postgres: Awaited<ReturnType<typeof startPostgres>> | undefined;
afterAll(async () => {
  await postgres?.stop();
});
contract("PostgreSQL", async () => {
  postgres = await startPostgres();
  await postgres.createDatabase("keys");
  return postgres.url("keys");
});
