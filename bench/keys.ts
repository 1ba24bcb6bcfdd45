/**
 * Key API throughput: GET /v1/keys/ with header auth (an HMAC of the secret and two indexed reads), against a bare
 * Express route answering a constant in the same process and run (the ratio is the cost of authentication and
 * storage); and login latency, deliberately slow (scrypt), reported as p50/p99 of sequential logins.
 *
 *   npx tsx bench/keys.ts [seconds=5] [connections=16]
 */
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import autocannon from "autocannon";
import express from "express";
import { Registry } from "prom-client";
import { parseConfig } from "../src/config/loadConfig.js";
import { startKeysApi } from "../src/keys/runKeysApi.js";
import { silentLogger } from "../src/log/logger.js";

const SECONDS = Number(process.argv[2] ?? 5);
const CONNECTIONS = Number(process.argv[3] ?? 16);
const PASSWORD = "benchmark password 123";

const dataDir = mkdtempSync(join(tmpdir(), "lightfleet-bench-keys-"));
const config = parseConfig(
  { dataDir, keys: { host: "127.0.0.1", port: 0, secureCookies: false } },
  "bench",
  {},
);
const keys = await startKeysApi({
  config,
  logger: silentLogger(),
  registry: new Registry(),
  env: { LIGHTFLEET_KEYS_PEPPER: "bench-pepper-0123456789abcdef0123456789" },
});
await keys.service.addUser("bench@example.org", PASSWORD);
const login = await keys.service.login("bench@example.org", PASSWORD, "127.0.0.1");
const session = await keys.service.session(login.token);
const pair = await keys.service.createKey(session!.userId);

const bare = express();
bare.get("/v1/keys/", (_req, res) => {
  res.json({
    keys: [{ accessKeyId: pair.accessKeyId, status: "Active", createdAt: pair.createdAt, lastUsedAt: null }],
  });
});
const bareServer = createServer(bare);
await new Promise<void>((resolve) => bareServer.listen(0, "127.0.0.1", resolve));
const bareUrl = `http://127.0.0.1:${(bareServer.address() as AddressInfo).port}`;

async function run(url: string): Promise<{ rps: number; p99: number; errors: number }> {
  const result = await autocannon({
    url: `${url}/v1/keys/`,
    headers: { "x-access-key-id": pair.accessKeyId, "x-secret-key": pair.secretKey },
    connections: CONNECTIONS,
    duration: SECONDS,
  });
  return { rps: result.requests.average, p99: result.latency.p99, errors: result.errors + result.non2xx };
}

try {
  const baseline = await run(bareUrl);
  const api = await run(keys.url);
  console.log(`key API GET /v1/keys/ (header auth), ${CONNECTIONS} connections, ${SECONDS} s per run`);
  console.log(`  bare Express route  ${baseline.rps.toFixed(0).padStart(6)} req/s  p99 ${baseline.p99} ms`);
  console.log(
    `  key API             ${api.rps.toFixed(0).padStart(6)} req/s  p99 ${api.p99} ms  (errors ${api.errors})`,
  );
  console.log(`  ratio key API / bare: ${(api.rps / baseline.rps).toFixed(2)}x`);

  const durations: number[] = [];
  for (let i = 0; i < 30; i++) {
    const started = performance.now();
    const response = await fetch(`${keys.url}/v1/user/login`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email: "bench@example.org", password: PASSWORD }),
    });
    await response.arrayBuffer();
    durations.push(performance.now() - started);
  }
  durations.sort((a, b) => a - b);
  const at = (q: number) =>
    durations[Math.min(durations.length - 1, Math.floor(q * durations.length))]!.toFixed(1);
  console.log(
    `  login (scrypt N=2^15, r=8, p=3): p50 ${at(0.5)} ms  p99 ${at(0.99)} ms over ${durations.length} sequential logins`,
  );
} finally {
  await keys.stop();
  bareServer.close();
  rmSync(dataDir, { recursive: true, force: true });
}
