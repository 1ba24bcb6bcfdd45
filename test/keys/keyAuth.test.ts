import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Client, startPostgres, startTestKeysApi } from "./support.js";

const PASSWORD = "correct horse battery staple";

/** The key pairs' quota, header authentication's throttle and audit, and media types, on each store. */
function keyAuth(storeName: string, databaseUrl: () => Promise<string | undefined>) {
  describe(`key pairs and header authentication on ${storeName}`, { timeout: 120_000 }, () => {
    let started: Awaited<ReturnType<typeof startTestKeysApi>>;
    beforeAll(async () => {
      const url = await databaseUrl();
      started = await startTestKeysApi({ ...(url ? { databaseUrl: url } : {}), trustProxy: 1 });
    });
    afterAll(async () => {
      await started?.stop();
    });
    const loggedIn = async (email: string) => {
      await started.api.service.addUser(email, PASSWORD);
      const client = new Client(started.api.url);
      await client.request("POST", "/v1/user/login", { email, password: PASSWORD });
      return client;
    };

    it("counts Inactive pairs against the quota of two, as AWS's AccessKeysPerUser does", async () => {
      const client = await loggedIn("quota@example.org");
      const a = (await client.request("POST", "/v1/keys/", {})).body;
      expect((await client.request("POST", "/v1/keys/", {})).status).toBe(201);
      expect(
        (await client.request("PATCH", `/v1/keys/${a.accessKeyId}`, { status: "Inactive" })).status,
      ).toBe(200);
      const third = await client.request("POST", "/v1/keys/", {});
      expect(third.status).toBe(409);
      expect(third.body).toMatchObject({ code: "key-limit-exceeded", limit: 2 });
      // Deleting the inactive one makes room.
      expect((await client.request("DELETE", `/v1/keys/${a.accessKeyId}`)).status).toBe(204);
      expect((await client.request("POST", "/v1/keys/", {})).status).toBe(201);
    });

    it.each([
      ["a charset other than UTF-8", { "content-type": "application/json; charset=latin1" }],
      ["an unknown content-encoding", { "content-type": "application/json", "content-encoding": "foo" }],
    ])("answers %s with 415 unsupported-media-type", async (_what, headers) => {
      const res = await new Client(started.api.url).request(
        "POST",
        "/v1/user/login",
        '{"email":"a@b.c"}',
        headers,
      );
      expect(res.status).toBe(415);
      expect(res.body.code).toBe("unsupported-media-type");
    });

    it("throttles wrong secrets from one address and audits them under the pair's owner", async () => {
      const client = await loggedIn("header@example.org");
      const { accessKeyId } = (await client.request("POST", "/v1/keys/", {})).body;
      const statuses: number[] = [];
      for (let i = 0; i < 120; i++)
        statuses.push(
          (
            await new Client(started.api.url, "203.0.113.77").request("GET", "/v1/keys/", undefined, {
              "x-access-key-id": accessKeyId,
              "x-secret-key": `lfsk_wrong${i}`,
            })
          ).status,
        );
      expect(statuses.slice(0, 100).every((s) => s === 401)).toBe(true);
      expect(statuses.slice(100).every((s) => s === 429)).toBe(true);
      const audit = await started.api.service.listAudit({ email: "header@example.org", limit: 200 });
      const failed = audit.filter((e) => e.event === "key-auth-failed");
      expect(failed.length).toBeGreaterThan(0);
      expect(failed[0]!.detail).toContain(accessKeyId);
      expect(failed[0]!.detail).toContain("203.0.113.77");
      expect(audit.filter((e) => e.event === "key-auth-throttled")).toHaveLength(1);
    });
  });
}

let postgres: Awaited<ReturnType<typeof startPostgres>> | undefined;
afterAll(async () => {
  await postgres?.stop();
});

keyAuth("SQLite", () => Promise.resolve(undefined));
keyAuth("PostgreSQL", async () => {
  postgres ??= await startPostgres();
  await postgres.createDatabase("keyauth");
  return postgres.url("keyauth");
});
