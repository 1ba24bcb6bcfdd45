/**
 * Key API throughput: GET /v1/keys/ with header auth (an HMAC of the secret and two indexed reads), against a bare
 * Express route answering a constant in the same process and run (the ratio is the cost of authentication and
 * storage); and login latency, deliberately slow (scrypt), reported as p50/p99 of sequential logins: idle (the
 * baseline), then while a burst of wrong passwords runs from another address against the same account, and while one
 * runs from a new address per request against random accounts (the ratios to idle are what an attack costs a user);
 * and the owner logging in while wrong passwords for the same account come from a new address per request, and from a
 * new /24 per request (a botnet): from the browser that logged in before (device cookie), from a new browser on a
 * network the account logged in from before, and from a new browser on a network never seen: latency and refusals.
 *
 *   npx tsx bench/keys.ts [--owner-only] [seconds=5] [connections=16]
 */
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Worker } from "node:worker_threads";
import autocannon from "autocannon";
import express from "express";
import { Registry } from "prom-client";
import { parseConfig } from "../src/config/loadConfig.js";
import { startKeysApi } from "../src/keys/runKeysApi.js";
import { silentLogger } from "../src/log/logger.js";

/**
 * The attack runs in a worker thread, like a client elsewhere: its own event loop, so what is measured is the
 * server's handling of it, not the bench's own fetch calls. 32 concurrent loops of wrong passwords until stopped.
 */
const ATTACKER = `
const { parentPort, workerData } = require("node:worker_threads");
const counts = {};
let running = true;
let n = 0;
parentPort.on("message", () => { running = false; });
async function loop() {
  while (running) {
    n++;
    const spread = workerData.spread;
    // A new address per request: "same-account-networks" also a new /24 each (a botnet), the others a few /24s.
    const address = spread === "one-address" ? "203.0.113.7"
      : spread === "same-account-networks" ? "10." + ((n >> 8) & 255) + "." + (n & 255) + ".1"
      : "10." + ((n >> 16) & 255) + "." + ((n >> 8) & 255) + "." + (n & 255);
    const email = spread === "accounts" ? "guess-" + n + "@example.org" : "bench@example.org";
    try {
      const response = await fetch(workerData.url + "/v1/user/login", {
        method: "POST",
        headers: { "content-type": "application/json", "x-forwarded-for": address },
        body: JSON.stringify({ email, password: "wrong password" }),
      });
      await response.arrayBuffer();
      counts[response.status] = (counts[response.status] || 0) + 1;
    } catch {
      counts.error = (counts.error || 0) + 1;
    }
  }
}
Promise.all(Array.from({ length: 32 }, loop)).then(() => parentPort.postMessage(counts));
`;

const USAGE = `usage: npx tsx bench/keys.ts [--owner-only] [seconds=5] [connections=16]
  seconds       length of each GET /v1/keys/ throughput run (a positive number)
  connections   concurrent connections of those runs (a positive integer)
  --owner-only  only the idle logins and the owner's logins during the botnet-shaped attack on the owner's account
Then times 30 sequential logins idle, during three kinds of wrong-password bursts, and the owner's logins during a
burst against the same account from many addresses and from a new /24 per guess (a botnet): from the browser that
logged in before, from a new browser on a network the account logged in from before, and from a new browser on a
network never seen.`;
const cliArgs = process.argv.slice(2);
if (cliArgs.some((a) => a === "--help" || a === "-h")) {
  console.log(USAGE);
  process.exit(0);
}
const OWNER_ONLY = cliArgs.includes("--owner-only");
const positional = cliArgs.filter((a) => a !== "--owner-only");
const SECONDS = Number(positional[0] ?? 5);
const CONNECTIONS = Number(positional[1] ?? 16);
if (!(SECONDS > 0) || !Number.isInteger(CONNECTIONS) || CONNECTIONS < 1) {
  console.error(USAGE);
  process.exit(2);
}
/** Sequential logins per measurement: too few for a p99, so the tail is reported as the maximum of them. */
const LOGINS = 30;

/** The real user's browser has logged in before: it holds the device cookie (see docs/keys.md). */
let deviceCookie = "";
const PASSWORD = "benchmark password 123";
/** Never-seen networks used so far by the owner's new-browser logins (each takes the next /24). */
let neverSeen = 0;

const dataDir = mkdtempSync(join(tmpdir(), "lightfleet-bench-keys-"));
const config = parseConfig(
  // Addresses come from X-Forwarded-For, so one client can play an attacker elsewhere.
  { dataDir, keys: { host: "127.0.0.1", port: 0, secureCookies: false, trustProxy: 1 } },
  "bench",
  {},
);
const keys = await startKeysApi({
  config,
  logger: silentLogger(),
  registry: new Registry(),
  env: {
    LIGHTFLEET_KEYS_PEPPER: "bench-pepper-0123456789abcdef0123456789",
    LIGHTFLEET_KEYS_SEED_KEY: "bench-seed-key-0123456789abcdef012345678",
  },
});
await keys.service.addUser("bench@example.org", PASSWORD);
const firstLogin = await keys.service.login("bench@example.org", PASSWORD, "127.0.0.1");
const session = await keys.service.session(firstLogin.token);
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
  if (!OWNER_ONLY) {
    const baseline = await run(bareUrl);
    const api = await run(keys.url);
    console.log(`key API GET /v1/keys/ (header auth), ${CONNECTIONS} connections, ${SECONDS} s per run`);
    console.log(`  bare Express route  ${baseline.rps.toFixed(0).padStart(6)} req/s  p99 ${baseline.p99} ms`);
    console.log(
      `  key API             ${api.rps.toFixed(0).padStart(6)} req/s  p99 ${api.p99} ms  (errors ${api.errors})`,
    );
    console.log(`  ratio key API / bare: ${(api.rps / baseline.rps).toFixed(2)}x`);
  }

  const idle = await timeLogins();
  report("idle", idle);
  if (!OWNER_ONLY) {
    const sameAccount = await underBurst("one-address", timeLogins);
    report("burst from one address, same account", sameAccount.user, idle, sameAccount.attacker);
    const spread = await underBurst("accounts", timeLogins);
    report("burst from a new address per request, random accounts", spread.user, idle, spread.attacker);
    const refused: number[] = [];
    const newBrowser = await underBurst("same-account", () => newBrowserLogins(refused, "new"));
    report(
      `owner from a new browser and network, burst from a new address per request on the same account (${refused.length} of ${LOGINS} refused)`,
      newBrowser.user,
      idle,
      newBrowser.attacker,
    );
  }
  // The botnet: every guess from a /24 of its own, so nothing about the guess's address repeats.
  const botnet = "a burst from a new /24 per request on the same account";
  const withCookie = await underBurst("same-account-networks", timeLogins);
  report(
    `owner from the browser that logged in before (device cookie), ${botnet}`,
    withCookie.user,
    idle,
    withCookie.attacker,
  );
  const refusedHome: number[] = [];
  const home = await underBurst("same-account-networks", () => newBrowserLogins(refusedHome, "known"));
  report(
    `owner from a new browser on a network it logged in from before, ${botnet} (${refusedHome.length} of ${LOGINS} refused)`,
    home.user,
    idle,
    home.attacker,
  );
  const refusedSpread: number[] = [];
  const spreadNetworks = await underBurst("same-account-networks", () =>
    newBrowserLogins(refusedSpread, "new"),
  );
  report(
    `owner from a new browser on a network never seen, ${botnet} (${refusedSpread.length} of ${LOGINS} refused)`,
    spreadNetworks.user,
    idle,
    spreadNetworks.attacker,
  );
} finally {
  await keys.stop();
  bareServer.close();
  rmSync(dataDir, { recursive: true, force: true });
}

async function login(
  email: string,
  password: string,
  address: string,
  cookie = "",
  keepDevice = true,
): Promise<number> {
  const response = await fetch(`${keys.url}/v1/user/login`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "x-forwarded-for": address,
      ...(cookie ? { cookie } : {}),
    },
    body: JSON.stringify({ email, password }),
  });
  await response.arrayBuffer();
  const device = response.headers.getSetCookie().find((c) => c.startsWith("lf_device="));
  if (device && keepDevice && email === "bench@example.org") deviceCookie = device.split(";")[0]!;
  return response.status;
}

/** Sequential logins of the real user from its own address, in milliseconds, sorted. */
async function timeLogins(): Promise<number[]> {
  const durations: number[] = [];
  for (let i = 0; i < LOGINS; i++) {
    const started = performance.now();
    const status = await login("bench@example.org", PASSWORD, "192.0.2.1", deviceCookie);
    if (status !== 200) throw new Error(`the real user's login answered ${status}`);
    durations.push(performance.now() - started);
  }
  return durations.sort((a, b) => a - b);
}

/**
 * Sequential logins of the owner from a browser with no device cookie and a new address each: milliseconds of each
 * (sorted), the status of any that were not let in pushed to `refused`. `known`: addresses in the /24 the owner's
 * usual browser logs in from (192.0.2.1); `new`: each from a /24 of its own, never seen before (198.18.0.0/15, the
 * benchmarking range; the guesses come from 10/8).
 */
async function newBrowserLogins(refused: number[], network: "known" | "new"): Promise<number[]> {
  const durations: number[] = [];
  for (let i = 0; i < LOGINS; i++) {
    const address =
      network === "known" ? `192.0.2.${100 + i}` : `198.${18 + (neverSeen >> 8)}.${neverSeen++ & 255}.1`;
    const started = performance.now();
    const status = await login("bench@example.org", PASSWORD, address, "", false);
    durations.push(performance.now() - started);
    if (status !== 200) refused.push(status);
  }
  return durations.sort((a, b) => a - b);
}

async function underBurst(
  spread: "one-address" | "accounts" | "same-account" | "same-account-networks",
  measure: () => Promise<number[]>,
): Promise<{ user: number[]; attacker: Map<string, number> }> {
  const worker = new Worker(ATTACKER, { eval: true, workerData: { url: keys.url, spread } });
  const done = new Promise<Record<string, number>>((resolve) => worker.once("message", resolve));
  try {
    return { user: await measure(), attacker: new Map(Object.entries(await stop())) };
  } finally {
    await stop();
  }
  async function stop() {
    worker.postMessage("stop");
    const counts = await done;
    await worker.terminate();
    return counts;
  }
}

function report(
  label: string,
  durations: number[],
  baseline?: number[],
  attacker?: Map<string, number>,
): void {
  const at = (list: number[], q: number) => list[Math.min(list.length - 1, Math.floor(q * list.length))]!;
  // 30 samples hold no p99: the slowest of them is reported, named for what it is.
  const max = (list: number[]) => list[list.length - 1]!;
  const ratio = baseline ? `  (max ${(max(durations) / max(baseline)).toFixed(2)}x idle)` : "";
  const attacks = attacker
    ? `; wrong passwords answered ${[...attacker].map(([status, count]) => `${count}x ${status}`).join(", ")}`
    : "";
  console.log(
    `  login (scrypt N=2^15, r=8, p=3), ${label}: p50 ${at(durations, 0.5).toFixed(1)} ms  max of ${durations.length} ${max(durations).toFixed(1)} ms${ratio}${attacks}`,
  );
}
