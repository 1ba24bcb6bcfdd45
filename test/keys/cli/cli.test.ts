import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { spawn } from "node:child_process";
import { parseConfig } from "../../../src/config/loadConfig.js";
import { openService } from "../../../src/keys/openService.js";
import { openKeyStore } from "../../../src/keys/store/database.js";
import { ROOT, runCli } from "../../support/runCli.js";
import { PEPPER, SECRETS_ENV } from "../support.js";

describe("lightfleet keys-api user", () => {
  const dir = mkdtempSync(join(tmpdir(), "lightfleet-keys-cli-"));
  const config = join(dir, "keys.yaml");
  writeFileSync(config, `dataDir: ${JSON.stringify(join(dir, "data"))}\n`);
  const env = { LIGHTFLEET_KEYS_PEPPER: PEPPER };
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("adds an account with the password from stdin, lists it, enrols 2FA once, disables it", async () => {
    const added = await runCli(
      ["keys-api", "user", "add", "--email", "Dana@Example.org", "--config", config],
      {
        input: "a long enough password\n",
        env,
      },
    );
    expect(added.stderr).toBe(`key store: sqlite:${join(dir, "data", "keys.sqlite")}\n`);
    expect(added.code).toBe(0);
    expect(added.stdout).toContain("added dana@example.org");

    const again = await runCli(
      ["keys-api", "user", "add", "--email", "dana@example.org", "--config", config],
      { input: "another long password", env },
    );
    expect(again.code).not.toBe(0);
    expect(again.stderr).toContain("exists already");

    const enrol = await runCli(
      ["keys-api", "user", "2fa", "enable", "--email", "dana@example.org", "--config", config],
      { env },
    );
    expect(enrol.code).toBe(0);
    expect(enrol.stdout).toMatch(
      /otpauth:\/\/totp\/lightfleet:dana%40example\.org\?secret=[A-Z2-7]+&issuer=lightfleet/,
    );
    expect(enrol.stdout).toMatch(/secret: [A-Z2-7]{16,}/);

    const list = await runCli(["keys-api", "user", "list", "--config", config], { env });
    expect(list.stdout).toContain("dana@example.org\t2fa=on\tactive\tkeys=0");
    const disabled = await runCli(
      ["keys-api", "user", "disable", "--email", "dana@example.org", "--config", config],
      { env },
    );
    expect(disabled.code).toBe(0);
    expect((await runCli(["keys-api", "user", "list", "--config", config], { env })).stdout).toContain(
      "\tdisabled\t",
    );
  });

  it("uses the database beside its config file wherever it runs from, and says which", async () => {
    const elsewhere = mkdtempSync(join(tmpdir(), "lightfleet-keys-rel-"));
    try {
      const relative = join(elsewhere, "relative.yaml");
      writeFileSync(relative, "dataDir: ./state\n");
      // runCli runs from the repository root, not from the config's directory.
      const added = await runCli(["keys-api", "user", "add", "--email", "rel@example.org", "-c", relative], {
        input: "a long enough password\n",
        env,
      });
      expect(added.code).toBe(0);
      const store = join(elsewhere, "state", "keys.sqlite");
      expect(added.stderr).toContain(`key store: sqlite:${store}`);
      expect(existsSync(store)).toBe(true);
      const list = await runCli(["keys-api", "user", "list", "-c", relative], { env });
      expect(list.stdout).toContain("rel@example.org");
      expect(list.stderr).toContain(`key store: sqlite:${store}`);
    } finally {
      rmSync(elsewhere, { recursive: true, force: true });
    }
  });

  it("refuses a short password and an invalid email, and never takes the password as an argument", async () => {
    const short = await runCli(
      ["keys-api", "user", "add", "--email", "eve@example.org", "--config", config],
      { input: "short", env },
    );
    expect(short.code).not.toBe(0);
    expect(short.stderr).toContain("at least 12 characters");
    const email = await runCli(["keys-api", "user", "add", "--email", "not-an-email", "--config", config], {
      input: "a long enough password",
      env,
    });
    expect(email.code).not.toBe(0);
    expect(email.stderr).toContain("not an email address");
    const argv = await runCli(
      ["keys-api", "user", "add", "--email", "eve@example.org", "--password", "x", "--config", config],
      { env },
    );
    expect(argv.code).toBe(2);
    expect(argv.stderr).toContain("unknown option");
  });
});

describe("lightfleet keys-api user: enable, passwd, audit of its own actions, and a closed pipe", () => {
  const dir = mkdtempSync(join(tmpdir(), "lightfleet-keys-cli2-"));
  const dataDir = join(dir, "data");
  const config = join(dir, "keys.yaml");
  writeFileSync(config, `dataDir: ${JSON.stringify(dataDir)}\n`);
  const env = SECRETS_ENV;
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("disables and enables an account, sets a password, and audits each action", async () => {
    const run = (args: string[], input?: string) =>
      runCli(["keys-api", "user", ...args, "--config", config], { env, ...(input ? { input } : {}) });
    expect((await run(["add", "--email", "fay@example.org"], "first long password")).code).toBe(0);
    expect((await run(["disable", "--email", "fay@example.org"])).code).toBe(0);
    const enabled = await run(["enable", "--email", "fay@example.org"]);
    expect(enabled.stdout).toContain("enabled fay@example.org");
    const passwd = await run(["passwd", "--email", "fay@example.org"], "second long password");
    expect(passwd.code).toBe(0);
    expect((await run(["passwd", "--email", "fay@example.org"], "short")).stderr).toContain("at least 12");
    const audit = await run(["audit", "--email", "fay@example.org"]);
    expect(
      audit.stdout
        .trim()
        .split("\n")
        .map((l) => l.split("\t")[1]),
    ).toEqual(["password-changed", "user-enabled", "user-disabled", "user-added"]);
    // The new password is the one that works.
    const store = await openKeyStore(undefined, dataDir);
    try {
      const service = await openService(store, env, parseConfig({ dataDir }, "test", {}));
      await expect(service.login("fay@example.org", "first long password", "10.0.0.1")).rejects.toThrow();
      await expect(
        service.login("fay@example.org", "second long password", "10.0.0.2"),
      ).resolves.toMatchObject({
        twoFactorRequired: false,
      });
    } finally {
      await store.close();
    }
  });

  it("stops quietly when its reader goes away (`user list | head -1`)", async () => {
    const store = await openKeyStore(undefined, dataDir);
    try {
      const hash = (await store.db.selectFrom("users").select("password_hash").executeTakeFirstOrThrow())
        .password_hash;
      const rows = Array.from({ length: 5_000 }, (_, i) => ({
        email: `bulk-${String(i).padStart(5, "0")}-${"x".repeat(60)}@example.org`,
        password_hash: hash,
        totp_secret: null,
        totp_pending: null,
        totp_last_step: null,
        disabled: 0,
        created_at: 0,
      }));
      for (let i = 0; i < rows.length; i += 500)
        await store.db
          .insertInto("users")
          .values(rows.slice(i, i + 500))
          .execute();
    } finally {
      await store.close();
    }
    const result = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      const child = spawn(
        "bash",
        [
          "-c",
          `set -o pipefail; "${process.execPath}" "${join(ROOT, "node_modules/tsx/dist/cli.mjs")}" "${join(ROOT, "src/cli.ts")}" keys-api user list --config "${config}" | head -1`,
        ],
        { env: { ...process.env, ...env } },
      );
      let stdout = "";
      let stderr = "";
      child.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
      child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
      child.on("close", (code) => resolve({ code, stdout, stderr }));
    });
    expect(result.stdout.trim().split("\n")).toHaveLength(1);
    // Only the line naming the key store (every user command says which it uses): no EPIPE stack.
    expect(result.stderr.trim().split("\n")).toEqual([expect.stringMatching(/^key store: sqlite:\//)]);
    expect(result.code).toBe(0);
  });
});
