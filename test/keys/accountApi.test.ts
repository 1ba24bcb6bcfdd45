import { generateSync } from "otplib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Client, startTestKeysApi } from "./support.js";

const PASSWORD = "correct horse battery staple";

/** The session-authenticated calls the page is built on. */
describe("key API account calls", () => {
  let started: Awaited<ReturnType<typeof startTestKeysApi>>;
  let now = Date.UTC(2026, 10, 24, 10, 0, 0);
  beforeAll(async () => {
    started = await startTestKeysApi({ clock: () => now });
    await started.api.service.addUser("acct@example.org", PASSWORD);
  });
  afterAll(async () => {
    await started?.stop();
  });

  const loggedIn = async () => {
    const client = new Client(started.api.url);
    expect(
      (await client.request("POST", "/v1/user/login", { email: "acct@example.org", password: PASSWORD }))
        .status,
    ).toBe(200);
    return client;
  };

  it("says who is logged in, and nothing without a session", async () => {
    expect((await new Client(started.api.url).request("GET", "/v1/user/me")).status).toBe(401);
    const client = await loggedIn();
    expect((await client.request("GET", "/v1/user/me")).body).toEqual({
      email: "acct@example.org",
      twoFactor: false,
      twoFactorPending: false,
      keyLimit: 2,
    });
  });

  it("names pairs, counts Inactive ones against the limit too, and lists them", async () => {
    const client = await loggedIn();
    const a = (await client.request("POST", "/v1/keys/", { name: "indexer" })).body;
    const b = (await client.request("POST", "/v1/keys/", {})).body;
    expect((await client.request("POST", "/v1/keys/", { name: "x".repeat(65) })).status).toBe(400);
    const off = await client.request("PATCH", `/v1/keys/${a.accessKeyId}`, { status: "Inactive" });
    expect(off.body).toMatchObject({ accessKeyId: a.accessKeyId, name: "indexer", status: "Inactive" });
    // An inactive pair does not authenticate, and still counts against the quota of two (as AWS's).
    const inactive = await new Client(started.api.url).request("GET", "/v1/keys/", undefined, {
      "x-access-key-id": a.accessKeyId,
      "x-secret-key": a.secretKey,
    });
    expect(inactive.status).toBe(401);
    expect((await client.request("POST", "/v1/keys/", {})).body.code).toBe("key-limit-exceeded");
    expect((await client.request("PATCH", `/v1/keys/${b.accessKeyId}`, { name: "renamed" })).body.name).toBe(
      "renamed",
    );
    expect((await client.request("PATCH", `/v1/keys/${b.accessKeyId}`, {})).status).toBe(400);

    // Listing through the session shows every pair and touches no "last used".
    const own = (await client.request("GET", "/v1/user/keys")).body.keys;
    expect(own.map((k: { accessKeyId: string; status: string }) => [k.accessKeyId, k.status])).toEqual([
      [a.accessKeyId, "Inactive"],
      [b.accessKeyId, "Active"],
    ]);
    expect(own.every((k: { lastUsedAt: unknown }) => k.lastUsedAt === null)).toBe(true);
    // The contract's header-authenticated listing keeps its shape, and shows the status of each pair.
    const listed = await new Client(started.api.url).request("GET", "/v1/keys/", undefined, {
      "x-access-key-id": b.accessKeyId,
      "x-secret-key": b.secretKey,
    });
    expect(Object.keys(listed.body.keys[0]).sort()).toEqual([
      "accessKeyId",
      "createdAt",
      "lastUsedAt",
      "status",
    ]);
    expect(
      listed.body.keys.find((k: { accessKeyId: string }) => k.accessKeyId === b.accessKeyId).lastUsedAt,
    ).toBe(new Date(now).toISOString());
    // Someone else's pair cannot be changed.
    await started.api.service.addUser("stranger@example.org", PASSWORD);
    const stranger = new Client(started.api.url);
    await stranger.request("POST", "/v1/user/login", { email: "stranger@example.org", password: PASSWORD });
    expect(
      (await stranger.request("PATCH", `/v1/keys/${b.accessKeyId}`, { status: "Inactive" })).status,
    ).toBe(404);
  });

  it("lists the account's sessions without their cookies and ends one", async () => {
    const mine = await loggedIn();
    const other = await loggedIn();
    const { sessions } = (await mine.request("GET", "/v1/user/sessions")).body;
    expect(sessions.length).toBeGreaterThanOrEqual(2);
    expect(sessions.filter((s: { current: boolean }) => s.current)).toHaveLength(1);
    expect(JSON.stringify(sessions)).not.toContain(mine.cookie!.split("=")[1]);
    const theirs = (await other.request("GET", "/v1/user/sessions")).body.sessions.find(
      (s: { current: boolean }) => s.current,
    );
    expect((await mine.request("DELETE", `/v1/user/sessions/${theirs.id}`)).status).toBe(204);
    expect((await other.request("GET", "/v1/user/me")).status).toBe(401);
    expect((await mine.request("DELETE", `/v1/user/sessions/${theirs.id}`)).status).toBe(404);
  });

  it("sets up two-factor authentication only with a code from the new seed", async () => {
    await started.api.service.addUser("tfa@example.org", PASSWORD);
    const client = new Client(started.api.url);
    await client.request("POST", "/v1/user/login", { email: "tfa@example.org", password: PASSWORD });
    expect((await client.request("POST", "/v1/user/twofactor/confirm", { token: "123456" })).body.code).toBe(
      "two-factor-setup-required",
    );
    const setup = (await client.request("POST", "/v1/user/twofactor/setup", { currentPassword: PASSWORD }))
      .body;
    expect(setup.uri).toMatch(/^otpauth:\/\/totp\/lightfleet:tfa%40example\.org\?secret=/);
    expect(setup.qrSvg).toMatch(/^<svg/);
    expect((await client.request("POST", "/v1/user/twofactor/confirm", { token: "000000" })).status).toBe(
      401,
    );
    const code = generateSync({ secret: setup.secret, epoch: Math.floor(now / 1000) });
    expect((await client.request("POST", "/v1/user/twofactor/confirm", { token: code })).status).toBe(200);
    expect(
      (await client.request("POST", "/v1/user/twofactor/setup", { currentPassword: PASSWORD })).body.code,
    ).toBe("two-factor-already-enabled");
    // The next login owes the second factor, and the confirming code cannot be replayed.
    const next = new Client(started.api.url);
    expect(
      (await next.request("POST", "/v1/user/login", { email: "tfa@example.org", password: PASSWORD })).body,
    ).toEqual({ twoFactorRequired: true });
    expect((await next.request("POST", "/v1/user/login/twofactor", { token: code })).status).toBe(401);
    now += 30_000;
    const fresh = generateSync({ secret: setup.secret, epoch: Math.floor(now / 1000) });
    expect((await next.request("POST", "/v1/user/login/twofactor", { token: fresh })).status).toBe(200);
  });

  it("changes the password only with the current one; other sessions end, this one stays", async () => {
    await started.api.service.addUser("pw@example.org", PASSWORD);
    const login = async (password: string) => {
      const c = new Client(started.api.url);
      const r = await c.request("POST", "/v1/user/login", { email: "pw@example.org", password });
      return { c, status: r.status };
    };
    const { c: mine } = await login(PASSWORD);
    const { c: other } = await login(PASSWORD);
    const wrong = await mine.request("POST", "/v1/user/password", {
      currentPassword: "not it",
      newPassword: "a new long password",
    });
    expect(wrong.status).toBe(401);
    expect(
      (await mine.request("POST", "/v1/user/password", { currentPassword: PASSWORD, newPassword: "short" }))
        .status,
    ).toBe(400);
    expect(
      (
        await mine.request("POST", "/v1/user/password", {
          currentPassword: PASSWORD,
          newPassword: "a new long password",
        })
      ).status,
    ).toBe(204);
    expect((await mine.request("GET", "/v1/user/me")).status).toBe(200);
    expect((await other.request("GET", "/v1/user/me")).status).toBe(401);
    expect((await login(PASSWORD)).status).toBe(401);
    expect((await login("a new long password")).status).toBe(200);
    const events = (await mine.request("GET", "/v1/user/audit")).body.entries.map(
      (e: { event: string }) => e.event,
    );
    expect(events).toContain("password-changed");
  });
});
