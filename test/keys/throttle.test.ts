import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Client, startPostgres, startTestKeysApi } from "./support.js";

const PASSWORD = "correct horse battery staple";
type Started = Awaited<ReturnType<typeof startTestKeysApi>>;

const login = (base: string, email: string, password: string, ip: string, cookie?: string) => {
  const client = new Client(base, ip);
  client.cookie = cookie;
  return client.request("POST", "/v1/user/login", { email, password }).then((r) => ({ ...r, client }));
};

/** The login throttle under bursts, on each store. */
function burst(storeName: string, databaseUrl: () => Promise<string | undefined>, size: number) {
  describe(`login throttle under concurrency on ${storeName}`, () => {
    let started: Started;
    beforeAll(async () => {
      const url = await databaseUrl();
      started = await startTestKeysApi({ ...(url ? { databaseUrl: url } : {}), trustProxy: 1 });
      await started.api.service.addUser("burst@example.org", PASSWORD);
      await started.api.service.addUser("owner@example.org", PASSWORD);
      await started.api.service.addUser("busy@example.org", PASSWORD);
    });
    afterAll(async () => {
      await started?.stop();
    });

    it(`checks at most 5 passwords of ${size} parallel wrong ones from one address; the rest get 429`, async () => {
      const results = await Promise.all(
        Array.from({ length: size }, () =>
          login(started.api.url, "burst@example.org", "wrong password", "203.0.113.5"),
        ),
      );
      const statuses = results.map((r) => r.status);
      expect(statuses.filter((s) => s === 401).length).toBeLessThanOrEqual(5);
      expect(statuses.filter((s) => s === 429)).toHaveLength(size - statuses.filter((s) => s === 401).length);
      for (const r of results.filter((r) => r.status === 429))
        expect(Number(r.headers.get("retry-after"))).toBeGreaterThan(0);
    });

    it("does not let the right password through at the end of a parallel burst", async () => {
      const attempts = Array.from({ length: 50 }, (_, i) =>
        login(started.api.url, "owner@example.org", i === 49 ? PASSWORD : "wrong password", "203.0.113.6"),
      );
      const results = await Promise.all(attempts);
      expect(results.filter((r) => r.status === 401).length).toBeLessThanOrEqual(5);
      expect(results[49]!.status).toBe(429);
    });

    it("still logs the owner in from another address while a burst runs", async () => {
      const attack = Promise.all(
        Array.from({ length: 40 }, () =>
          login(started.api.url, "busy@example.org", "wrong password", "198.51.100.1"),
        ),
      );
      const owner = await login(started.api.url, "busy@example.org", PASSWORD, "192.0.2.44");
      await attack;
      expect(owner.status).toBe(200);
    });
  });
}

let postgres: Awaited<ReturnType<typeof startPostgres>> | undefined;
afterAll(async () => {
  await postgres?.stop();
});
const postgresUrl = async (db: string) => {
  postgres ??= await startPostgres();
  await postgres.createDatabase(db);
  return postgres.url(db);
};

burst("SQLite", () => Promise.resolve(undefined), 200);
burst("PostgreSQL", () => postgresUrl("burst"), 30);

describe("two-factor throttle across two replicas on PostgreSQL", () => {
  let a: Started;
  let b: Started;
  beforeAll(async () => {
    const url = await postgresUrl("totp");
    a = await startTestKeysApi({ databaseUrl: url });
    b = await startTestKeysApi({ databaseUrl: url });
    await a.api.service.addUser("totp@example.org", PASSWORD);
    await a.api.service.enableTwoFactor("totp@example.org");
  });
  afterAll(async () => {
    await a?.stop();
    await b?.stop();
  });

  it("evaluates at most 5 of 300 parallel wrong codes sent through both replicas", async () => {
    const first = await login(a.api.url, "totp@example.org", PASSWORD, "127.0.0.1");
    expect(first.body).toEqual({ twoFactorRequired: true });
    const cookie = first.client.cookie;
    const results = await Promise.all(
      Array.from({ length: 300 }, (_, i) => {
        const client = new Client(i % 2 === 0 ? a.api.url : b.api.url);
        client.cookie = cookie;
        return client.request("POST", "/v1/user/login/twofactor", { token: "000000" });
      }),
    );
    const rejected = results.filter((r) => r.body?.code === "invalid-two-factor-token");
    expect(rejected.length).toBeGreaterThan(0);
    expect(rejected.length).toBeLessThanOrEqual(5);
    expect(results.filter((r) => r.status === 429)).toHaveLength(300 - rejected.length);
  });
});

describe("lockout by others (OWASP: per account and address, plus a per-account slow-down)", () => {
  let started: Started;
  const now = Date.UTC(2026, 10, 24, 9, 0, 0);
  beforeAll(async () => {
    started = await startTestKeysApi({ trustProxy: 1, clock: () => now });
    await started.api.service.addUser("victim@example.org", PASSWORD);
    await started.api.service.addUser("known@example.org", PASSWORD);
  });
  afterAll(async () => {
    await started?.stop();
  });

  it("refuses the guessing address after 5 failures but lets the owner in from another", async () => {
    for (let i = 0; i < 5; i++)
      expect((await login(started.api.url, "victim@example.org", "guess", "203.0.113.9")).status).toBe(401);
    expect((await login(started.api.url, "victim@example.org", PASSWORD, "203.0.113.9")).status).toBe(429);
    expect((await login(started.api.url, "victim@example.org", PASSWORD, "192.0.2.10")).status).toBe(200);
  });

  it("slows guessing from many addresses down without locking the owner out", async () => {
    // Owner logged in once from this browser: it holds a device cookie.
    const before = await login(started.api.url, "known@example.org", PASSWORD, "192.0.2.20");
    expect(before.status).toBe(200);
    const device = /lf_device=[^;]+/.exec(before.headers.get("set-cookie") ?? "")?.[0];
    expect(device).toBeTruthy();

    let refused = 0;
    for (let i = 0; i < 16; i++) {
      const r = await login(started.api.url, "known@example.org", "guess", `198.51.100.${i}`);
      if (r.status === 429) refused++;
      else expect(r.status).toBe(401);
    }
    // Past the slow-down threshold (10 failures) no guess is answered 401 any more: each is refused, or checked and
    // answered as a refusal is.
    expect(refused).toBe(6);
    // The owner's browser is not slowed; from a fresh browser and address the right password gets in at once too.
    expect((await login(started.api.url, "known@example.org", PASSWORD, "192.0.2.21", device)).status).toBe(
      200,
    );
    expect((await login(started.api.url, "known@example.org", PASSWORD, "192.0.2.22")).status).toBe(200);
  });

  it("takes the address the proxy appended, never the client's own X-Forwarded-For entries", async () => {
    await started.api.service.addUser("proxy@example.org", PASSWORD);
    const client = new Client(started.api.url, "ignored");
    await client.request(
      "POST",
      "/v1/user/login",
      { email: "proxy@example.org", password: "wrong" },
      { "x-forwarded-for": "6.6.6.6, 10.20.30.40" },
    );
    const [entry] = await started.api.service.listAudit({ email: "proxy@example.org", limit: 1 });
    expect(entry!.detail).toBe("ip 10.20.30.40");
  });
});
