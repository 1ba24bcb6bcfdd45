import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { runCli } from "../support/runCli.js";
import { PEPPER } from "./support.js";

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
