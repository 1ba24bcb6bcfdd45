import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Client, startTestKeysApi } from "./support.js";

const PASSWORD = "correct horse battery staple";

/** Every refusal is a problem answer with a `detail`, never a 500, a stack or an echo of huge input. */
describe("key API problem answers", () => {
  let started: Awaited<ReturnType<typeof startTestKeysApi>>;
  let base: string;
  beforeAll(async () => {
    started = await startTestKeysApi();
    base = started.api.url;
    await started.api.service.addUser("problems@example.org", PASSWORD);
  });
  afterAll(async () => {
    await started?.stop();
  });

  const loggedIn = async () => {
    const client = new Client(base);
    expect(
      (await client.request("POST", "/v1/user/login", { email: "problems@example.org", password: PASSWORD }))
        .status,
    ).toBe(200);
    return client;
  };

  it.each(["foo", "", "http://[::1", "null"])("refuses Origin %j with 403, not 500", async (origin) => {
    const client = await loggedIn();
    const res = await client.request("POST", "/v1/keys/", undefined, { origin });
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ code: "cross-site-request", detail: expect.any(String) });
    expect(started.logs.join("")).not.toContain("unexpected error");
  });

  it("refuses an Origin of the right host but another scheme, and records the refusal", async () => {
    const client = await loggedIn();
    const host = new URL(base).host;
    const res = await client.request("POST", "/v1/keys/", undefined, { origin: `https://${host}` });
    expect(res.status).toBe(403);
    const [entry] = await started.api.service.listAudit({ limit: 1 });
    expect(entry).toMatchObject({ event: "cross-site-refused" });
    expect(entry!.detail).toMatch(/another scheme/);
    expect((await client.request("POST", "/v1/keys/", undefined, { origin: `http://${host}` })).status).toBe(
      201,
    );
  });

  it.each([
    ["403", "POST", "/v1/user/logout", undefined, { "sec-fetch-site": "cross-site" }, 403],
    ["404 route", "GET", "/v1/nothing-here", undefined, {}, 404],
    ["413", "POST", "/v1/user/login", { email: "a@b.c", password: "x".repeat(20_000) }, {}, 413],
    ["415", "POST", "/v1/user/login", "email=a", { "content-type": "text/plain" }, 415],
    ["invalid JSON", "POST", "/v1/user/login", "{", {}, 400],
    ["invalid body", "POST", "/v1/user/login", { email: 5 }, {}, 400],
  ] as const)("gives the %s answer a detail", async (_what, method, path, body, headers, status) => {
    const res = await new Client(base).request(method, path, body, { ...headers });
    expect(res.status).toBe(status);
    expect(res.headers.get("content-type")).toMatch(/^application\/problem\+json/);
    expect(res.body.detail).toEqual(expect.any(String));
    expect(res.body.detail.length).toBeGreaterThan(0);
  });

  it("does not echo a 5,000-character id in a 404", async () => {
    const client = await loggedIn();
    const id = "A".repeat(5_000);
    const res = await client.request("DELETE", `/v1/keys/${id}`);
    expect(res.status).toBe(404);
    expect(JSON.stringify(res.body).length).toBeLessThan(500);
    expect(res.body.detail).not.toContain("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAA");
  });

  it.each([
    ["PUT", "/v1/keys/", "GET, POST"],
    ["GET", "/v1/user/login", "POST"],
    ["PATCH", "/v1/user/logout", "POST"],
    ["POST", "/v1/keys/LFAKAAAAAAAAAAAAAAAA", "PATCH, DELETE"],
  ])("answers %s %s with 405 and Allow", async (method, path, allow) => {
    const client = await loggedIn();
    const res = await client.request(method, path);
    expect(res.status).toBe(405);
    expect(res.headers.get("allow")).toBe(allow);
    expect(res.body).toMatchObject({ code: "method-not-allowed", detail: expect.any(String) });
  });
});
