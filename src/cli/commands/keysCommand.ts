import type { Command } from "commander";
import { portOption } from "../options.js";
import { InvalidArgumentError } from "commander";

interface CommonFlags {
  config?: string;
}

export function registerKeysCommand(program: Command): void {
  const keys = program
    .command("keys-api")
    .description("serve the marketplace key API and its web page; `keys-api user …` manages accounts")
    .option("-c, --config <file>", "YAML config file")
    // `keys-api --config F` serves; `keys-api user add --config F` manages accounts: each reads its own options.
    .enablePositionalOptions()
    .option("--port <port>", "key API port (default keys.port, 8080)", portOption)
    .option(
      "--admin-port <port>",
      "admin port for /metrics, /healthz, /readyz (default admin.port, 9464)",
      portOption,
    )
    .action(async (flags: CommonFlags & { port?: number; adminPort?: number }) => {
      const { serveKeysApi } = await import("../../keys/cli/serve.js");
      await serveKeysApi(flags);
    });

  const user = keys
    .command("user")
    .description("manage key API accounts (the database is the one keys-api uses)");
  const withConfig = (c: Command) => c.option("-c, --config <file>", "YAML config file");
  withConfig(
    user.command("add").description("add an account; the password is read from stdin, never from arguments"),
  )
    .requiredOption("--email <email>", "the account's email")
    .action(async (flags: CommonFlags & { email: string }) =>
      (await import("../../keys/cli/userCommands.js")).addUser(flags),
    );
  withConfig(
    user.command("list").description("list accounts with their two-factor state and active key pairs"),
  ).action(async (flags: CommonFlags) => (await import("../../keys/cli/userCommands.js")).listUsers(flags));
  withConfig(
    user.command("disable").description("disable an account: its sessions end and its keys stop working"),
  )
    .requiredOption("--email <email>", "the account's email")
    .action(async (flags: CommonFlags & { email: string }) =>
      (await import("../../keys/cli/userCommands.js")).disableUser(flags),
    );
  withConfig(user.command("enable").description("enable a disabled account again"))
    .requiredOption("--email <email>", "the account's email")
    .action(async (flags: CommonFlags & { email: string }) =>
      (await import("../../keys/cli/userCommands.js")).enableUser(flags),
    );
  withConfig(
    user
      .command("passwd")
      .description("set a new password, read from stdin, never from arguments; the account's sessions end"),
  )
    .requiredOption("--email <email>", "the account's email")
    .action(async (flags: CommonFlags & { email: string }) =>
      (await import("../../keys/cli/userCommands.js")).setPassword(flags),
    );
  withConfig(
    user
      .command("audit")
      .description("show the audit trail (logins, second factors, key creation and deletion), newest first"),
  )
    .option("--email <email>", "only this account's entries")
    .option("--limit <n>", "at most this many entries (default 100)", (v: string) => {
      const n = Number(v);
      if (!/^\d+$/.test(v) || n < 1 || n > 100_000) throw new InvalidArgumentError("must be 1-100000");
      return n;
    })
    .action(async (flags: CommonFlags & { email?: string; limit?: number }) =>
      (await import("../../keys/cli/userCommands.js")).showAudit(flags),
    );
  const twoFactor = user.command("2fa").description("two-factor authentication (TOTP)");
  withConfig(twoFactor.command("enable").description("enrol: prints the otpauth:// URI and the secret, once"))
    .requiredOption("--email <email>", "the account's email")
    .action(async (flags: CommonFlags & { email: string }) =>
      (await import("../../keys/cli/userCommands.js")).enableTwoFactor(flags),
    );
  withConfig(twoFactor.command("disable").description("turn two-factor authentication off"))
    .requiredOption("--email <email>", "the account's email")
    .action(async (flags: CommonFlags & { email: string }) =>
      (await import("../../keys/cli/userCommands.js")).disableTwoFactor(flags),
    );
}
