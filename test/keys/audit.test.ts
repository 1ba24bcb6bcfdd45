import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../support/runCli.js";
import { Client, SECRETS_ENV, startTestKeysApi } from "./support.js";

const PASSWORD = "audit trail password";

describe("key API audit trail", () => {
  let started: Awaited<ReturnType<typeof startTestKeysApi>>;
  beforeAll(async () => {
    started = await startTestKeysApi();
    await started.api.service.addUser("audit@example.org", PASSWORD);
  });
  afterAll(async () => {
    await started?.stop();
  });

  it("records logins, key creation and deletion and logout, without secrets, readable from the CLI", async () => {
    const base = started.api.url;
    const client = new Client(base);
    expect(
      (await client.request("POST", "/v1/user/login", { email: "audit@example.org", password: "wrong one" }))
        .status,
    ).toBe(401);
    expect(
      (await client.request("POST", "/v1/user/login", { email: "audit@example.org", password: PASSWORD }))
        .status,
    ).toBe(200);
    const created = await client.request("POST", "/v1/keys/");
    expect(created.status).toBe(201);
    const id = created.body.accessKeyId as string;
    expect((await client.request("DELETE", `/v1/keys/${id}`)).status).toBe(204);
    expect((await client.request("POST", "/v1/user/logout")).status).toBe(204);

    const entries = await started.api.service.listAudit({ email: "audit@example.org" });
    expect(entries.map((e) => e.event)).toEqual([
      "logout",
      "key-deleted",
      "key-created",
      "login",
      "login-failed",
      "user-added",
    ]);
    expect(entries.filter((e) => e.event.startsWith("key-")).map((e) => e.detail)).toEqual([
      `${id}, ip 127.0.0.1`,
      `${id}, ip 127.0.0.1`,
    ]);
    const dump = JSON.stringify(entries);
    expect(dump).not.toContain(created.body.secretKey as string);
    expect(dump).not.toContain(PASSWORD);

    const config = join(started.dataDir, "audit.yaml");
    writeFileSync(config, `dataDir: ${JSON.stringify(started.dataDir)}\n`);
    const cli = await runCli(
      ["keys-api", "user", "audit", "--email", "audit@example.org", "--config", config],
      {
        env: SECRETS_ENV,
      },
    );
    expect(cli.code).toBe(0);
    const lines = cli.stdout.trim().split("\n");
    expect(lines).toHaveLength(6);
    expect(lines[2]).toMatch(
      new RegExp(
        `^\\d{4}-\\d\\d-\\d\\dT[^\\t]+\\tkey-created\\taudit@example\\.org\\t${id}, ip 127\\.0\\.0\\.1$`,
      ),
    );
    expect(cli.stdout).not.toContain(created.body.secretKey as string);
  });
});
