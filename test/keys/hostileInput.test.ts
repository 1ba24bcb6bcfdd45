import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Client, startPostgres, startTestKeysApi } from "./support.js";

const PASSWORD = "correct horse battery staple";

/** Input PostgreSQL refuses (NUL bytes) gets a 4xx problem answer on both stores, never a 500. */
function hostileInput(storeName: string, databaseUrl: () => Promise<string | undefined>) {
  describe(`input the database cannot store on ${storeName}`, () => {
    let started: Awaited<ReturnType<typeof startTestKeysApi>>;
    let client: Client;
    let keyId: string;
    beforeAll(async () => {
      const url = await databaseUrl();
      started = await startTestKeysApi(url ? { databaseUrl: url } : {});
      await started.api.service.addUser("nul@example.org", PASSWORD);
      client = new Client(started.api.url);
      await client.request("POST", "/v1/user/login", { email: "nul@example.org", password: PASSWORD });
      keyId = (await client.request("POST", "/v1/keys/", {})).body.accessKeyId;
    });
    afterAll(async () => {
      await started?.stop();
    });

    it.each([
      ["a name with a NUL", "POST", "/v1/keys/", { name: "a\u0000b" }],
      ["a rename to a NUL", "PATCH", "KEY", { name: "\u0000" }],
      ["a NUL key id", "PATCH", "/v1/keys/%00", { status: "Inactive" }],
      ["a NUL key id", "DELETE", "/v1/keys/%00", undefined],
      ["a NUL session id", "DELETE", "/v1/user/sessions/%00", undefined],
      ["a NUL in an email", "POST", "/v1/user/login", { email: "a\u0000@example.org", password: "x" }],
      ["a NUL in a password", "POST", "/v1/user/login", { email: "nul@example.org", password: "a\u0000b" }],
    ])("answers %s (%s) with a 4xx problem", async (_what, method, path, body) => {
      const res = await client.request(method, path === "KEY" ? `/v1/keys/${keyId}` : path, body);
      expect(res.status).toBeGreaterThanOrEqual(400);
      expect(res.status).toBeLessThan(500);
      expect(res.headers.get("content-type")).toMatch(/^application\/problem\+json/);
      expect(res.body.detail).toEqual(expect.any(String));
      expect(started.logs.join("")).not.toContain("unexpected error");
    });

    it("refuses a NUL name with invalid-body and a NUL id as not found, the same on both stores", async () => {
      expect((await client.request("POST", "/v1/keys/", { name: "a\u0000b" })).body.code).toBe(
        "invalid-body",
      );
      expect((await client.request("DELETE", "/v1/keys/%00")).body.code).toBe("key-not-found");
      expect((await client.request("DELETE", "/v1/user/sessions/%00")).body.code).toBe("session-not-found");
    });
  });
}

let postgres: Awaited<ReturnType<typeof startPostgres>> | undefined;
afterAll(async () => {
  await postgres?.stop();
});

hostileInput("SQLite", () => Promise.resolve(undefined));
hostileInput("PostgreSQL", async () => {
  postgres ??= await startPostgres();
  await postgres.createDatabase("hostile");
  return postgres.url("hostile");
});
