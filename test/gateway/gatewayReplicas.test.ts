import type { ChildProcessWithoutNullStreams } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { JsonRpcProvider, Network } from "ethers";
import { createPublicClient, http } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import type { AnvilNode } from "../../src/devnet/anvil.js";
import { LOG_EMITTER_BYTECODE, LOG_EMITTER_TOPIC } from "../../src/devnet/devTransactions.js";
import { toQuantity } from "../../src/rpc/blocks.js";
import { HttpRpcClient } from "../../src/rpc/httpRpcClient.js";
import { nginxTool, startNginx } from "../support/nginx.js";
import { commandLine, descendants } from "../support/processTree.js";
import type { Balancer } from "../support/nginx.js";
import { freePort, redisTool, startRedis } from "../support/redisServer.js";
import type { RedisServer } from "../support/redisServer.js";
import { spawnGateway } from "../support/runCli.js";
import type { SpawnedGateway } from "../support/runCli.js";
import { waitFor } from "../support/waitFor.js";
import { rawWs, startUpstreamNode, writeGatewayConfig } from "./support.js";

interface RpcAnswer {
  result?: unknown;
  error?: { code: number; message: string; data?: unknown };
}

/**
 * One call on a connection of its own, as client `address` (the balancer passes X-Forwarded-For on and the gateways
 * trust it): the balancer sends it to the next replica.
 */
export function callAs(
  url: string,
  address: string,
  method: string,
  params: unknown[] = [],
): Promise<{ status: number; body: RpcAnswer }> {
  const body = JSON.stringify({ jsonrpc: "2.0", id: 1, method, params });
  return new Promise((resolve, reject) => {
    const req = request(
      `${url}/`,
      {
        method: "POST",
        agent: false,
        headers: { "content-type": "application/json", "x-forwarded-for": address },
        timeout: 10_000,
      },
      (res) => {
        let text = "";
        res.on("data", (chunk: Buffer) => (text += chunk.toString()));
        res.on("end", () => {
          try {
            resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) as RpcAnswer });
          } catch {
            reject(new Error(`not JSON (HTTP ${res.statusCode}): ${text.slice(0, 200)}`));
          }
        });
        res.on("error", reject);
      },
    );
    req.on("timeout", () => req.destroy(new Error(`${method} took longer than 10 s`)));
    req.on("error", reject);
    req.end(body);
  });
}

const missing = [redisTool, nginxTool].find((tool) => !tool.path)?.missing;
if (missing) console.warn(`skipping the gateway replica tests: ${missing}`);

/** Requests per second each address may make, over all replicas together. */
const RATE = 40;
/** How long the event watchers get steady events while a replica is killed and restarted. */
const SOAK_MS = 60_000;

describe.skipIf(missing !== undefined)(
  "three gateway replicas behind nginx, sharing state through Redis",
  () => {
    let node: AnvilNode;
    let redis: RedisServer;
    let balancer: Balancer;
    let dir: string;
    let config: string;
    const replicas: Array<{ port: number; gateway?: SpawnedGateway }> = [];
    const anvil = () => new HttpRpcClient(node.httpUrl, 10_000);

    async function startReplica(index: number): Promise<void> {
      const replica = replicas[index]!;
      replica.gateway = await spawnGateway(config, {}, replica.port);
      await waitFor(async () => (await fetch(`${replica.gateway!.admin}/readyz`)).status === 200, {
        what: `replica ${index} ready`,
        timeoutMs: 30_000,
      });
    }

    /** Kills a replica as a crash would: tsx's wrapper and the gateway process under it. */
    async function killReplica(index: number): Promise<void> {
      const child: ChildProcessWithoutNullStreams | undefined = replicas[index]?.gateway?.child;
      if (!child || child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
      const tree = descendants(child.pid!);
      child.kill("SIGKILL");
      for (const pid of tree) process.kill(pid, "SIGKILL");
      await exited;
      await waitFor(() => tree.every((pid) => commandLine(pid) === ""), { what: `replica ${index} gone` });
    }

    beforeAll(async () => {
      node = await startUpstreamNode();
      redis = await startRedis();
      dir = mkdtempSync(join(tmpdir(), "lightfleet-gateway-replicas-"));
      config = writeGatewayConfig(join(dir, "gateway.yaml"), {
        peer: node.httpUrl,
        network: { upstreams: [{ name: "upstream", http: node.httpUrl, ws: node.wsUrl }] },
        gateway: {
          sharedState: { backend: "redis", url: redis.url },
          trustForwardedFor: true,
          rateLimit: { requestsPerSecond: RATE, burst: RATE },
          maxFiltersPerAddress: 3,
          maxWsConnectionsPerAddress: 2,
        },
      });
      for (let i = 0; i < 3; i++) replicas.push({ port: await freePort() });
      await Promise.all(replicas.map((_, i) => startReplica(i)));
      balancer = await startNginx(replicas.map((r) => `127.0.0.1:${r.port}`));
    });

    afterAll(async () => {
      await balancer?.stop();
      await Promise.all(replicas.map((_, i) => killReplica(i)));
      await redis?.stop();
      await node?.stop();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    it("serves a filter's changes once and in order whichever replica is polled", async () => {
      const client = "10.0.0.1";
      const [from] = (await anvil().call("eth_accounts", [])) as string[];
      const deployed = await anvil().call("eth_sendTransaction", [{ from, data: LOG_EMITTER_BYTECODE }]);
      await anvil().call("anvil_mine", ["0x1"]);
      const emitter = (
        (await anvil().call("eth_getTransactionReceipt", [deployed])) as { contractAddress: string }
      ).contractAddress;
      // Every replica serves the head with the emitter before the filters are made.
      const head = Number(await anvil().call("eth_blockNumber", []));
      await waitFor(
        async () => {
          const answers = await Promise.all(
            [0, 1, 2].map(() => callAs(balancer.url, client, "eth_blockNumber")),
          );
          return answers.every((a) => Number(a.body.result) >= head);
        },
        { what: "every replica at the emitter's block" },
      );

      const blocks = (await callAs(balancer.url, client, "eth_newBlockFilter")).body;
      const logs = (await callAs(balancer.url, client, "eth_newFilter", [{ address: emitter }])).body;
      expect(blocks.error).toBeUndefined();
      expect(logs.error).toBeUndefined();

      const minedHashes: string[] = [];
      const seenHashes: string[] = [];
      const seenData: string[] = [];
      const errors: RpcAnswer["error"][] = [];
      const poll = async () => {
        for (const [filter, seen] of [
          [blocks.result, seenHashes],
          [logs.result, seenData],
        ] as const) {
          const answer = (await callAs(balancer.url, client, "eth_getFilterChanges", [filter])).body;
          if (answer.error) errors.push(answer.error);
          for (const change of (answer.result ?? []) as Array<string | { data: string }>)
            seen.push(typeof change === "string" ? change : change.data);
        }
      };
      for (let i = 1; i <= 6; i++) {
        await anvil().call("eth_sendTransaction", [{ from, to: emitter, data: `0x0${i}` }]);
        await anvil().call("anvil_mine", ["0x1"]);
        minedHashes.push(
          ((await anvil().call("eth_getBlockByNumber", ["latest", false])) as { hash: string }).hash,
        );
        // Three polls per block: each replica gets a turn between two blocks.
        for (let p = 0; p < 3; p++) await poll();
      }
      await waitFor(
        async () => {
          await poll();
          return seenHashes.length >= minedHashes.length && seenData.length >= 6;
        },
        { what: "every change polled", timeoutMs: 10_000 },
      );
      expect(errors).toEqual([]);
      expect(seenHashes).toEqual(minedHashes);
      expect(seenData).toEqual(["0x01", "0x02", "0x03", "0x04", "0x05", "0x06"]);
    });

    it("limits an address to the configured rate over all replicas together", async () => {
      const client = "10.0.0.2";
      // A burst of fresh connections, spread round robin: the burst is admitted once, not once per replica.
      const burstStarted = Date.now();
      const burst = await Promise.all(
        Array.from({ length: 2 * RATE * replicas.length }, () => callAs(balancer.url, client, "eth_chainId")),
      );
      const admittedAtOnce = burst.filter((a) => a.status === 200).length;
      // The calls take a moment to send: what refilled meanwhile may be admitted too, no more.
      const refilled = (RATE * (Date.now() - burstStarted)) / 1000;
      expect(admittedAtOnce).toBeGreaterThanOrEqual(RATE);
      expect(admittedAtOnce).toBeLessThanOrEqual(Math.ceil(RATE + refilled) + 1);

      // Sustained: eight clients in a loop for three seconds from an empty bucket get RATE per second, ±10%. The
      // burst's last answers can take a while on a loaded machine, and the bucket refills meanwhile: emptied again
      // (until a call is refused) right before the clock starts.
      await waitFor(
        async () => {
          const drain = await Promise.all(
            Array.from({ length: RATE }, () => callAs(balancer.url, client, "eth_chainId")),
          );
          return drain.some((a) => a.status === 429);
        },
        { what: "the bucket empty" },
      );
      const started = Date.now();
      let admitted = 0;
      let offered = 0;
      await Promise.all(
        Array.from({ length: 8 }, async () => {
          while (Date.now() - started < 3_000) {
            offered++;
            if ((await callAs(balancer.url, client, "eth_chainId")).status === 200) admitted++;
          }
        }),
      );
      const expected = (RATE * (Date.now() - started)) / 1000;
      console.log(
        `rate limit ${RATE}/s over 3 replicas: ${admitted} admitted of ${offered} in ${Date.now() - started} ms`,
      );
      // What the clients offered below the rate (a loaded machine sends slowly) must all be admitted.
      expect(admitted).toBeGreaterThanOrEqual(Math.floor(Math.min(expected, offered) * 0.9));
      expect(admitted).toBeLessThanOrEqual(Math.ceil(expected * 1.1) + 1);
    });

    it("caps an address's filters over all replicas together", async () => {
      const client = "10.0.0.3";
      const made = [];
      for (let i = 0; i < 6; i++) made.push((await callAs(balancer.url, client, "eth_newBlockFilter")).body);
      expect(made.filter((a) => a.result !== undefined)).toHaveLength(3);
      expect(made.slice(3).every((a) => a.error?.code === -32005)).toBe(true);
    });

    it("caps an address's WebSocket connections over all replicas together, and gives them back on close", async () => {
      const wsUrl = `${balancer.url.replace("http", "ws")}/ws`;
      /** A WebSocket through the balancer as client 10.0.0.6: the socket, or the HTTP status it was refused with. */
      const connect = () =>
        new Promise<WebSocket | number>((resolve, reject) => {
          const ws = new WebSocket(wsUrl, { headers: { "x-forwarded-for": "10.0.0.6" } });
          ws.once("open", () => resolve(ws));
          ws.once("unexpected-response", (_req, res) => resolve(res.statusCode ?? 0));
          ws.once("error", reject);
        });
      const opened: WebSocket[] = [];
      try {
        // One after the other: round robin puts them on different replicas.
        const results: Array<WebSocket | number> = [];
        for (let i = 0; i < 4; i++) results.push(await connect());
        for (const r of results) if (typeof r !== "number") opened.push(r);
        expect(opened).toHaveLength(2);
        expect(results.filter((r) => r === 429)).toHaveLength(2);
        // A closed connection gives its lease back: another may open.
        const closed = new Promise((resolve) => opened[0]!.once("close", resolve));
        opened.shift()!.close();
        await closed;
        const again = await waitFor(
          async () => {
            const r = await connect();
            return typeof r === "number" ? undefined : r;
          },
          { what: "a connection once one closed" },
        );
        opened.push(again);
      } finally {
        for (const ws of opened) ws.close();
      }
    });

    it(
      "gives ethers' and viem's event watchers every event once and in order while a replica and Redis restart",
      async () => {
        const [from] = (await anvil().call("eth_accounts", [])) as string[];
        const deployed = await anvil().call("eth_sendTransaction", [{ from, data: LOG_EMITTER_BYTECODE }]);
        await anvil().call("anvil_mine", ["0x1"]);
        const emitter = (
          (await anvil().call("eth_getTransactionReceipt", [deployed])) as { contractAddress: `0x${string}` }
        ).contractAddress;
        const emit = async (data: string) => {
          await anvil().call("eth_sendTransaction", [{ from, to: emitter, data }]);
          await anvil().call("anvil_mine", ["0x1"]);
        };

        // Both poll filters through the balancer (eth_newFilter, eth_getFilterChanges), each call on any replica.
        const ethersSeen: string[] = [];
        const viemSeen: string[] = [];
        const viemErrors: string[] = [];
        const provider = new JsonRpcProvider(balancer.url, Network.from(31_337), {
          staticNetwork: true,
          pollingInterval: 250,
        });
        await provider.on({ address: emitter, topics: [LOG_EMITTER_TOPIC] }, (log: { data: string }) => {
          ethersSeen.push(log.data);
        });
        const viem = createPublicClient({ transport: http(balancer.url), pollingInterval: 250 });
        const unwatch = viem.watchEvent({
          address: emitter,
          poll: true,
          onLogs: (logs) => viemSeen.push(...logs.map((l) => l.data)),
          onError: (error) => viemErrors.push((error as { details?: string }).details ?? error.message),
        });
        // eth_blockNumber through the balancer all along: it never goes back.
        const heads: number[] = [];
        let polling = true;
        const headPoller = (async () => {
          while (polling) {
            const answer = await callAs(balancer.url, "10.0.2.1", "eth_blockNumber").catch(() => undefined);
            if (answer?.body.result) heads.push(Number(answer.body.result));
          }
        })();
        const seenByBoth = (data: string) => ethersSeen.includes(data) && viemSeen.includes(data);
        // As on a live chain, blocks keep coming: ethers asks for a filter's changes when it sees a new block, and
        // misses a block that comes while it is still asking (it polls again at the next one).
        let minedAt = Date.now();
        const bothSee = (data: string) =>
          waitFor(
            async () => {
              if (seenByBoth(data)) return true;
              if (Date.now() - minedAt > 500) {
                minedAt = Date.now();
                await anvil().call("anvil_mine", ["0x1"]);
              }
              return false;
            },
            { what: `both watchers to see ${data}`, timeoutMs: 20_000 },
          ).catch((error: Error) => {
            const viemSaw = `${viemSeen.join()} (errors: ${viemErrors.join(" | ")})`;
            throw new Error(`${error.message}; ethers saw ${ethersSeen.join()}, viem ${viemSaw}`);
          });
        try {
          // Each installs its filter at its first poll: a marker event is sent until both have theirs in place.
          await waitFor(
            async () => {
              await emit("0xff");
              return waitFor(() => seenByBoth("0xff"), { timeoutMs: 2_000 }).catch(() => false);
            },
            { what: "both watchers started", timeoutMs: 30_000 },
          );
          // Events one after the other for SOAK_MS, each sent once both watchers have the one before (the pace
          // follows the machine's load, a few per second): a replica killed (as a crash: no drain) a third of the
          // way, started again two thirds of the way while the events go on.
          const events: string[] = [];
          const soakStarted = Date.now();
          let killed = false;
          let restarted: Promise<void> | undefined;
          while (Date.now() - soakStarted < SOAK_MS) {
            const elapsed = Date.now() - soakStarted;
            if (!killed && elapsed > SOAK_MS / 3) {
              killed = true;
              await killReplica(0);
            }
            if (killed && !restarted && elapsed > (2 * SOAK_MS) / 3) restarted = startReplica(0);
            const data = `0x${(events.length + 1).toString(16).padStart(4, "0")}`;
            events.push(data);
            await emit(data);
            await bothSee(data);
          }
          await restarted;
          console.log(`event watchers: ${events.length} events in ${Date.now() - soakStarted} ms`);
          expect(killed && restarted).toBeTruthy();
          // Redis killed while the watchers poll (their calls fail, quickly), an event sent meanwhile, Redis back.
          await redis.kill();
          await waitFor(
            async () =>
              (
                await callAs(balancer.url, "10.0.2.2", "eth_getFilterChanges", ["0x1"])
              ).body.error?.message.startsWith("filters are unavailable"),
            { what: "the outage seen by the replicas" },
          );
          await emit("0x0a");
          await redis.restart();
          // Every replica back on Redis (each on its own reconnection backoff) before the next block. Asked from an
          // address of its own, at a pace under the rate limit: once Redis is back the limit holds again, and the
          // head poller above spends its own address's allowance as fast as it can.
          let lastAnswers = "";
          await waitFor(
            async () => {
              // "filter not found" for an id no one made: the replica asked Redis.
              const answers = await Promise.all(
                replicas.map(() => callAs(balancer.url, "10.0.2.3", "eth_getFilterChanges", ["0x1"])),
              );
              lastAnswers = JSON.stringify(answers.map((a) => a.body));
              return answers.every((a) => a.body.error?.message === "filter not found");
            },
            {
              what: () => `every replica on Redis again (last answers: ${lastAnswers})`,
              timeoutMs: 15_000,
              intervalMs: 100,
            },
          );
          await emit("0x0b");
          await bothSee("0x0b");

          const expected = [...events, "0x0a", "0x0b"];
          expect(ethersSeen.filter((d) => d !== "0xff")).toEqual(expected);
          expect(viemSeen.filter((d) => d !== "0xff")).toEqual(expected);
        } finally {
          polling = false;
          await headPoller;
          unwatch();
          provider.destroy();
        }
        expect(heads.length).toBeGreaterThan(10);
        for (let i = 1; i < heads.length; i++) expect(heads[i]).toBeGreaterThanOrEqual(heads[i - 1]!);
        for (const replica of replicas) expect(replica.gateway!.child.exitCode).toBeNull();
      },
      SOAK_MS + 90_000,
    );

    it("goes on through a Redis outage as documented and recovers without a restart", async () => {
      const client = "10.0.0.4";
      const filter = (await callAs(balancer.url, client, "eth_newBlockFilter")).body.result as string;
      expect(filter).toMatch(/^0x/);
      await redis.kill();

      // Every replica answers at once (no call waits for Redis): limits fail open, filter calls say why they fail.
      for (let i = 0; i < 2 * replicas.length; i++) {
        const started = Date.now();
        const chainId = await callAs(balancer.url, client, "eth_chainId");
        expect(chainId.status).toBe(200);
        expect(chainId.body.result).toBe("0x7a69");
        const head = await callAs(balancer.url, client, "eth_blockNumber");
        expect(Number(head.body.result)).toBeGreaterThan(0);
        const changes = await callAs(balancer.url, client, "eth_getFilterChanges", [filter]);
        expect(changes.body.error).toEqual({
          code: -32603,
          message: "filters are unavailable: the gateway's shared store does not answer; try again shortly",
        });
        expect(Date.now() - started).toBeLessThan(5_000);
      }

      // A block mined while Redis is away is not lost to the filter: its cursor did not move.
      await anvil().call("anvil_mine", ["0x1"]);
      const missed = ((await anvil().call("eth_getBlockByNumber", ["latest", false])) as { hash: string })
        .hash;

      // Back (with its data: it writes every change to its append-only file): the replicas reconnect by themselves.
      await redis.restart();
      const delivered = await waitFor(
        async () => {
          const answer = (await callAs(balancer.url, client, "eth_getFilterChanges", [filter])).body;
          return answer.error ? undefined : (answer.result as string[]);
        },
        { what: "the filter served again", timeoutMs: 15_000 },
      );
      expect(delivered).toContain(missed);
      // Every replica back (each reconnects on its own backoff): nothing more to deliver, whichever answers.
      await waitFor(
        async () => {
          const answers = await Promise.all(
            replicas.map(() => callAs(balancer.url, client, "eth_getFilterChanges", [filter])),
          );
          const failed = answers.find((a) => a.body.error);
          if (failed) throw new Error(JSON.stringify(failed.body.error));
          return answers.every((a) => Array.isArray(a.body.result) && a.body.result.length === 0);
        },
        { what: "every replica serving the filter again", timeoutMs: 15_000 },
      );
      // And the rate limit holds again: a burst well over it is refused in part.
      await waitFor(
        async () => {
          const burst = await Promise.all(
            Array.from({ length: 3 * RATE }, () => callAs(balancer.url, "10.0.0.5", "eth_chainId")),
          );
          return burst.some((a) => a.status === 429);
        },
        { what: "the rate limit applied again", timeoutMs: 15_000 },
      );
      // The replicas are the ones started at the beginning: nothing was restarted.
      for (const replica of replicas) expect(replica.gateway!.child.exitCode).toBeNull();
    });
  },
);

describe.skipIf(missing !== undefined)("replicas whose nodes lag differently, behind nginx", () => {
  const nodes: AnvilNode[] = [];
  const gateways: SpawnedGateway[] = [];
  let redis: RedisServer;
  let balancer: Balancer;
  let dir: string;

  beforeAll(async () => {
    redis = await startRedis();
    dir = mkdtempSync(join(tmpdir(), "lightfleet-gateway-lag-"));
    // Two chains of the same id, one ahead of the other: each replica fronts one.
    nodes.push(await startUpstreamNode(), await startUpstreamNode());
    await new HttpRpcClient(nodes[0]!.httpUrl, 10_000).call("anvil_mine", ["0x7"]);
    for (const [i, node] of nodes.entries()) {
      const config = writeGatewayConfig(join(dir, `replica-${i}.yaml`), {
        peer: node.httpUrl,
        network: { upstreams: [{ name: `node-${i}`, http: node.httpUrl, ws: node.wsUrl }] },
        // A call naming a block no node of the replica has waits up to two block times for one: short here, where
        // a replica's node is held behind on purpose.
        blockTime: "1s",
        gateway: { sharedState: { backend: "redis", url: redis.url } },
      });
      const gateway = await spawnGateway(config);
      gateways.push(gateway);
      await waitFor(async () => (await fetch(`${gateway.admin}/readyz`)).status === 200, {
        what: `replica ${i} ready`,
        timeoutMs: 30_000,
      });
    }
    balancer = await startNginx(gateways.map((g) => new URL(g.url).host));
  });

  afterAll(async () => {
    await balancer?.stop();
    for (const gateway of gateways) {
      const tree = descendants(gateway.child.pid!);
      const exited = new Promise<void>((resolve) => gateway.child.once("exit", () => resolve()));
      gateway.child.kill("SIGKILL");
      for (const pid of tree) process.kill(pid, "SIGKILL");
      await exited;
    }
    await redis?.stop();
    for (const node of nodes) await node.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("never answers eth_blockNumber lower than any replica answered before", async () => {
    const answers: number[] = [];
    const poll = async () =>
      answers.push(Number((await callAs(balancer.url, "10.0.1.1", "eth_blockNumber")).body.result));
    for (let i = 0; i < 6; i++) await poll();
    // The lagging replica's node catches up, then both go on.
    await new HttpRpcClient(nodes[1]!.httpUrl, 10_000).call("anvil_mine", ["0x8"]);
    for (let i = 0; i < 6; i++) await poll();
    expect(answers.slice(0, 6)).toContain(10);
    for (let i = 1; i < answers.length; i++) expect(answers[i]).toBeGreaterThanOrEqual(answers[i - 1]!);
    expect(answers.at(-1)).toBe(11);
  });

  const rpc = (i: number) => new HttpRpcClient(nodes[i]!.httpUrl, 10_000);
  const heightOf = async (i: number) => Number(await rpc(i).call("eth_blockNumber", []));
  const wsUrl = (i: number) => `${gateways[i]!.url.replace("http", "ws")}/ws`;
  /** The heights a newHeads subscription was sent so far. */
  const headsOf = (messages: unknown[]) =>
    messages
      .filter((m) => (m as { method?: string }).method === "eth_subscription")
      .map((m) => Number((m as { params: { result: { number: string } } }).params.result.number));

  it("never announces a newHeads on a reconnect lower than a head another replica announced", async () => {
    const heights = [await heightOf(0), await heightOf(1)];
    // Replica 0's node goes five blocks ahead of replica 1's; its subscriber is sent the top.
    const top = Math.max(...heights) + 5;
    const first = await rawWs(wsUrl(0));
    try {
      await first.call("eth_subscribe", ["newHeads"]);
      await rpc(0).call("anvil_mine", [toQuantity(top - heights[0]!)]);
      await waitFor(() => headsOf(first.messages).includes(top), { what: `replica 0 to announce ${top}` });
    } finally {
      first.close();
    }
    // The client reconnects and lands on replica 1, whose node climbs from behind to one past the top.
    const second = await rawWs(wsUrl(1));
    try {
      await second.call("eth_subscribe", ["newHeads"]);
      await rpc(1).call("anvil_mine", [toQuantity(top + 1 - heights[1]!)]);
      await waitFor(() => headsOf(second.messages).includes(top + 1), {
        what: `replica 1 to announce ${top + 1}`,
      });
      const announced = headsOf(second.messages);
      expect(announced.filter((n) => n < top)).toEqual([]);
      expect(announced).toEqual([...announced].sort((a, b) => a - b));
    } finally {
      second.close();
    }
  });

  it("resolves latest in every call against the head any replica served", async () => {
    const heights = [await heightOf(0), await heightOf(1)];
    // Replica 0's node four blocks ahead; a client reads the head there.
    const top = Math.max(...heights) + 4;
    await rpc(0).call("anvil_mine", [toQuantity(top - heights[0]!)]);
    await waitFor(
      async () => Number((await callAs(gateways[0]!.url, "10.0.1.3", "eth_blockNumber")).body.result) === top,
      { what: `replica 0 to serve ${top}` },
    );
    // On replica 1 (node behind): nothing that names the head answers below the top. Its node has no block at the
    // top yet, so a block asked for by `latest` may be null (as for any block a node lacks), never an older block.
    const onLagging = (method: string, params: unknown[]) =>
      callAs(gateways[1]!.url, "10.0.1.3", method, params);
    expect(Number((await onLagging("eth_blockNumber", [])).body.result)).toBeGreaterThanOrEqual(top);
    const block = (await onLagging("eth_getBlockByNumber", ["latest", false])).body;
    expect(block.error).toBeUndefined();
    if (block.result !== null)
      expect(Number((block.result as { number: string }).number)).toBeGreaterThanOrEqual(top);
    // The window of eth_getLogs is judged against the top: a range ending at the head the client saw is not "past
    // the head" on another replica.
    const logs = (
      await onLagging("eth_getLogs", [{ fromBlock: toQuantity(top - 1), toBlock: toQuantity(top) }])
    ).body;
    expect(logs.error?.message ?? "").not.toMatch(/past the head/);

    // Its node catches up: `latest` is the top's block there too, through the balancer whichever replica answers.
    await rpc(1).call("anvil_mine", [toQuantity(top - heights[1]!)]);
    await waitFor(
      async () => Number((await callAs(gateways[1]!.url, "10.0.1.3", "eth_blockNumber")).body.result) >= top,
      { what: `replica 1 at ${top}` },
    );
    const numbers: number[] = [];
    for (let i = 0; i < 6; i++) {
      const answer = (await callAs(balancer.url, "10.0.1.3", "eth_getBlockByNumber", ["latest", false])).body;
      numbers.push(Number((answer.result as { number: string }).number));
    }
    expect(numbers.every((n) => n >= top)).toBe(true);
  });
});
