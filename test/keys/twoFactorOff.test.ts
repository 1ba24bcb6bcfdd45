import { generateSync } from "otplib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Client, startTestKeysApi } from "./support.js";

const PASSWORD = "correct horse battery staple";
const OFF = "/v1/user/twofactor/disable";

/** Turning two-factor authentication off from a session: the password and a fresh code, throttled and audited. */
describe("POST /v1/user/twofactor/disable", () => {
  let started: Awaited<ReturnType<typeof startTestKeysApi>>;
  let now = Date.UTC(2026, 10, 24, 12, 0, 0);
  beforeAll(async () => {
    started = await startTestKeysApi({ clock: () => now });
  });
  afterAll(async () => {
    await started?.stop();
  });

  const code = (secret: string) => generateSync({ secret, epoch: Math.floor(now / 1000) });
  /** Each code is good once: the next one comes from the next 30-second step. */
  const nextStep = () => {
    now += 30_000;
  };

  /** An account with two-factor authentication on (from the CLI); returns its seed. */
  const withTwoFactor = async (email: string) => {
    await started.api.service.addUser(email, PASSWORD);
    return (await started.api.service.enableTwoFactor(email)).secret;
  };

  /** A session past both factors. */
  const fullLogin = async (email: string, secret: string) => {
    const client = new Client(started.api.url);
    const first = await client.request("POST", "/v1/user/login", { email, password: PASSWORD });
    expect(first.body).toEqual({ twoFactorRequired: true });
    expect((await client.request("POST", "/v1/user/login/twofactor", { token: code(secret) })).status).toBe(
      200,
    );
    nextStep();
    return client;
  };

  const events = async (client: Client) =>
    (await client.request("GET", "/v1/user/audit")).body.entries as Array<{ event: string; detail: string }>;

  const expectProblem = (
    res: Awaited<ReturnType<Client["request"]>>,
    status: number,
    problemCode: string,
    detail: RegExp,
  ) => {
    expect(res.status).toBe(status);
    expect(res.headers.get("content-type")).toMatch(/^application\/problem\+json/);
    expect(res.body).toMatchObject({ status, code: problemCode, detail: expect.stringMatching(detail) });
  };

  it("turns it off with the current password and a fresh code: the next login needs no code, other sessions end, the audit trail shows it", async () => {
    const secret = await withTwoFactor("off@example.org");
    const mine = await fullLogin("off@example.org", secret);
    const other = await fullLogin("off@example.org", secret);
    const host = new URL(started.api.url).host;

    // What the page sends: same-origin marks, as every state-changing call from it.
    const res = await mine.request(
      "POST",
      OFF,
      { currentPassword: PASSWORD, token: code(secret) },
      { origin: `http://${host}`, "sec-fetch-site": "same-origin" },
    );
    expect(res.status).toBe(204);

    expect((await mine.request("GET", "/v1/user/me")).body).toMatchObject({ twoFactor: false });
    expect((await other.request("GET", "/v1/user/me")).status).toBe(401);
    const next = new Client(started.api.url);
    expect(
      (await next.request("POST", "/v1/user/login", { email: "off@example.org", password: PASSWORD })).body,
    ).toEqual({ twoFactorRequired: false });
    expect((await next.request("POST", "/v1/keys/", {})).status).toBe(201);

    const [latest] = (await events(mine)).filter((e) => e.event.startsWith("two-factor-disabled"));
    expect(latest).toMatchObject({ event: "two-factor-disabled" });
    expect(latest!.detail).toMatch(/ip 127\.0\.0\.1.*1 other session ended/);

    expectProblem(
      await mine.request("POST", OFF, { currentPassword: PASSWORD, token: code(secret) }),
      409,
      "two-factor-not-enabled",
      /not on/,
    );
  });

  it("turned off by an operator (keys-api user 2fa disable), every session of the account ends", async () => {
    const secret = await withTwoFactor("lost@example.org");
    const phone = await fullLogin("lost@example.org", secret);
    const laptop = await fullLogin("lost@example.org", secret);
    await started.api.service.disableTwoFactor("lost@example.org");
    // The owner lost the authenticator (or someone else holds it): no session opened under the old rule lives on.
    expect((await phone.request("GET", "/v1/user/me")).status).toBe(401);
    expect((await laptop.request("GET", "/v1/user/me")).status).toBe(401);
    const again = new Client(started.api.url);
    expect(
      (await again.request("POST", "/v1/user/login", { email: "lost@example.org", password: PASSWORD })).body,
    ).toEqual({ twoFactorRequired: false });
    const [latest] = (await events(again)).filter((e) => e.event === "two-factor-disabled");
    expect(latest!.detail).toMatch(/by cli.*2 sessions ended/);
  });

  it("refuses a wrong password, a wrong code and a replayed code with problem details, and audits each", async () => {
    const secret = await withTwoFactor("wrong@example.org");
    const loginCode = code(secret);
    const client = new Client(started.api.url);
    await client.request("POST", "/v1/user/login", { email: "wrong@example.org", password: PASSWORD });
    expect((await client.request("POST", "/v1/user/login/twofactor", { token: loginCode })).status).toBe(200);

    const wrongPassword = await client.request("POST", OFF, {
      currentPassword: "not the password",
      token: code(secret),
    });
    expectProblem(wrongPassword, 401, "invalid-credentials", /password is not correct/);
    expectProblem(
      await client.request("POST", OFF, { currentPassword: PASSWORD, token: "000000" }),
      401,
      "invalid-two-factor-token",
      /code is not valid/,
    );
    // The code that opened the session cannot be replayed to turn the factor off.
    expectProblem(
      await client.request("POST", OFF, { currentPassword: PASSWORD, token: loginCode }),
      401,
      "invalid-two-factor-token",
      /code is not valid/,
    );
    expectProblem(
      await client.request("POST", OFF, { currentPassword: PASSWORD, token: "12" }),
      400,
      "invalid-body",
      /token/,
    );
    expectProblem(
      await client.request("POST", OFF, { token: "123456" }),
      400,
      "invalid-body",
      /currentPassword/,
    );

    // Still on, and a refused attempt does not end the session.
    expect((await client.request("GET", "/v1/user/me")).body).toMatchObject({ twoFactor: true });
    const failed = (await events(client)).filter((e) => e.event === "two-factor-disable-failed");
    expect(failed.map((e) => e.detail)).toEqual([
      "ip 127.0.0.1, code already used",
      "ip 127.0.0.1, wrong code",
      "ip 127.0.0.1, wrong password",
    ]);
    expect(JSON.stringify(await events(client))).not.toContain("not the password");
  });

  it("is throttled like login (5 attempts in 15 minutes, shared with the password change) and lets the owner in once the window ends", async () => {
    const secret = await withTwoFactor("slow@example.org");
    const client = await fullLogin("slow@example.org", secret);
    for (let i = 0; i < 5; i++)
      expect(
        (await client.request("POST", OFF, { currentPassword: `guess ${i}`, token: code(secret) })).status,
      ).toBe(401);

    const refused = await client.request("POST", OFF, { currentPassword: PASSWORD, token: code(secret) });
    expectProblem(refused, 429, "throttled", /too many attempts/);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    // One budget for every re-authentication of the account: the password change is refused too.
    expect(
      (
        await client.request("POST", "/v1/user/password", {
          currentPassword: PASSWORD,
          newPassword: "another long password",
        })
      ).status,
    ).toBe(429);
    expect((await events(client)).map((e) => [e.event, e.detail])).toContainEqual([
      "two-factor-disable-failed",
      "ip 127.0.0.1, throttled",
    ]);
    expect((await client.request("GET", "/v1/user/me")).body).toMatchObject({ twoFactor: true });

    now += 15 * 60_000;
    expect(
      (await client.request("POST", OFF, { currentPassword: PASSWORD, token: code(secret) })).status,
    ).toBe(204);
  });

  it("evaluates at most 5 of 20 parallel wrong passwords; the rest are 429", async () => {
    const secret = await withTwoFactor("burst@example.org");
    const client = await fullLogin("burst@example.org", secret);
    const results = await Promise.all(
      Array.from({ length: 20 }, () =>
        client.request("POST", OFF, { currentPassword: "wrong guess", token: "000000" }),
      ),
    );
    const evaluated = results.filter((r) => r.status === 401);
    expect(evaluated.length).toBeGreaterThan(0);
    expect(evaluated.length).toBeLessThanOrEqual(5);
    expect(results.filter((r) => r.status === 429)).toHaveLength(20 - evaluated.length);
    expect(results.every((r) => typeof r.body.detail === "string")).toBe(true);
  });

  it("needs a session past the second factor and refuses other sites, like every state-changing call", async () => {
    const secret = await withTwoFactor("guarded@example.org");
    const body = () => ({ currentPassword: PASSWORD, token: code(secret) });

    expectProblem(
      await new Client(started.api.url).request("POST", OFF, body()),
      401,
      "session-required",
      /log in/,
    );
    const halfway = new Client(started.api.url);
    await halfway.request("POST", "/v1/user/login", { email: "guarded@example.org", password: PASSWORD });
    expectProblem(await halfway.request("POST", OFF, body()), 401, "two-factor-required", /two-factor/);

    const client = await fullLogin("guarded@example.org", secret);
    expectProblem(
      await client.request("POST", OFF, body(), { origin: "https://evil.example" }),
      403,
      "cross-site-request",
      /this site/,
    );
    expectProblem(
      await client.request("POST", OFF, body(), { "sec-fetch-site": "cross-site" }),
      403,
      "cross-site-request",
      /Sec-Fetch-Site/,
    );
    const [refusal] = await started.api.service.listAudit({ limit: 1 });
    expect(refusal).toMatchObject({ event: "cross-site-refused" });
    expect(refusal!.detail).toContain(`POST ${OFF}`);
    const get = await client.request("GET", OFF);
    expect(get.status).toBe(405);
    expect(get.headers.get("allow")).toBe("POST");
    expect((await client.request("GET", "/v1/user/me")).body).toMatchObject({ twoFactor: true });
  });
});
