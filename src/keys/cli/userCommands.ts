import { loadConfig, parseConfig } from "../../config/loadConfig.js";
import type { Config } from "../../config/schema.js";
import { openService } from "../openService.js";
import { MIN_PASSWORD_LENGTH } from "../service.js";
import type { KeysService } from "../service.js";
import { openKeyStore } from "../store/database.js";
import { readPassword } from "./readPassword.js";

// `keys-api user list | head`: a reader that goes away ends the listing quietly, as for any Unix tool.
process.stdout.on("error", (error: NodeJS.ErrnoException) => {
  if (error.code === "EPIPE") process.exit(0);
  throw error;
});

async function withService<T>(
  flags: { config?: string },
  run: (service: KeysService) => Promise<T>,
): Promise<T> {
  const config: Config = flags.config ? await loadConfig(flags.config) : parseConfig({});
  const store = await openKeyStore(config.keys.databaseUrl, config.dataDir);
  // On stderr, so the output stays the listing: which database the accounts are in (a wrong -c or working
  // directory would otherwise show as "no accounts" from a new, empty one).
  process.stderr.write(`key store: ${store.description}\n`);
  try {
    return await run(await openService(store, process.env, config));
  } finally {
    await store.close();
  }
}

export async function addUser(flags: { config?: string; email: string }): Promise<void> {
  if (!/^[^@\s]+@[^@\s]+$/.test(flags.email))
    throw new Error(`--email: not an email address: ${flags.email}`);
  const password = await readPassword(`Password for ${flags.email}: `);
  if (password.length < MIN_PASSWORD_LENGTH)
    throw new Error(`the password must be at least ${MIN_PASSWORD_LENGTH} characters`);
  await withService(flags, (s) => s.addUser(flags.email, password));
  process.stdout.write(`added ${flags.email.toLowerCase()}\n`);
}

export async function listUsers(flags: { config?: string }): Promise<void> {
  const users = await withService(flags, (s) => s.listUsers());
  if (users.length === 0) return void process.stdout.write("no accounts\n");
  for (const u of users)
    process.stdout.write(
      `${u.email}\t2fa=${u.twoFactor ? "on" : "off"}\t${u.disabled ? "disabled" : "active"}\tkeys=${u.activeKeys}\n`,
    );
}

export async function disableUser(flags: { config?: string; email: string }): Promise<void> {
  await withService(flags, (s) => s.disableUser(flags.email));
  process.stdout.write(`disabled ${flags.email.toLowerCase()}\n`);
}

export async function enableUser(flags: { config?: string; email: string }): Promise<void> {
  await withService(flags, (s) => s.enableUser(flags.email));
  process.stdout.write(`enabled ${flags.email.toLowerCase()}\n`);
}

/** Sets a new password (from stdin or a prompt, never argv); every session of the account ends. */
export async function setPassword(flags: { config?: string; email: string }): Promise<void> {
  const password = await readPassword(`New password for ${flags.email}: `);
  if (password.length < MIN_PASSWORD_LENGTH)
    throw new Error(`the password must be at least ${MIN_PASSWORD_LENGTH} characters`);
  await withService(flags, (s) => s.setPassword(flags.email, password));
  process.stdout.write(`password changed for ${flags.email.toLowerCase()}; its sessions have ended\n`);
}

export async function enableTwoFactor(flags: { config?: string; email: string }): Promise<void> {
  const { secret, uri } = await withService(flags, (s) => s.enableTwoFactor(flags.email));
  process.stdout.write(
    `Two-factor authentication is on for ${flags.email.toLowerCase()}. Add it to an authenticator app now;\n`,
  );
  process.stdout.write(`this is the only time the secret is shown.\n\n  ${uri}\n\n  secret: ${secret}\n`);
}

export async function disableTwoFactor(flags: { config?: string; email: string }): Promise<void> {
  await withService(flags, (s) => s.disableTwoFactor(flags.email));
  process.stdout.write(`two-factor authentication is off for ${flags.email.toLowerCase()}\n`);
}

export async function showAudit(flags: { config?: string; email?: string; limit?: number }): Promise<void> {
  const rows = await withService(flags, (s) =>
    s.listAudit({ ...(flags.email ? { email: flags.email } : {}), limit: flags.limit ?? 100 }),
  );
  if (rows.length === 0) return void process.stdout.write("no audit entries\n");
  for (const r of rows) process.stdout.write(`${r.at}\t${r.event}\t${r.email ?? "-"}\t${r.detail}\n`);
}
