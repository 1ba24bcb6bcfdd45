import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RedisLeaseCap } from "../../../src/gateway/sharedState/redisLeases.js";
import { RedisRateLimiter } from "../../../src/gateway/sharedState/redisRateLimiter.js";
import { SharedHead } from "../../../src/gateway/sharedState/sharedHead.js";
import { SharedStore } from "../../../src/gateway/sharedState/sharedStore.js";
import { silentLogger } from "../../../src/log/logger.js";
import { Registry } from "prom-client";
import { redisTool, startRedis } from "../../support/redisServer.js";
import { startStallingProxy } from "../../support/stallingProxy.js";
import type { RedisServer } from "../../support/redisServer.js";
import { waitFor } from "../../support/waitFor.js";

if (!redisTool.path) console.warn(`skipping the shared-state tests: ${redisTool.missing}`);

/** Scripts the Redis server has run, from every client (a raise or read of the shared head is one). */
async function scriptCalls(store: SharedStore): Promise<number> {
  return Number((await store.redis.info("commandstats")).match(/cmdstat_evalsha:calls=(\d+)/)?.[1] ?? 0);
}

/** Two replicas' views of one Redis: each its own connection, as two gateway processes have. */
describe.skipIf(!redisTool.path)("gateway state in a real Redis", () => {
  let redis: RedisServer;
  const stores: SharedStore[] = [];
  const registries = new Map<SharedStore, Registry>();
  /** Round trips a store made for the shared head (reads and raises), from its own metrics. */
  const headRoundTrips = async (of: SharedStore) => {
    const metric = await registries
      .get(of)!
      .getSingleMetric("lightfleet_gateway_shared_store_duration_seconds")!
      .get();
    return (
      metric.values.find(
        (v) => (v as { metricName?: string }).metricName?.endsWith("_count") && v.labels.operation === "head",
      )?.value ?? 0
    );
  };
  const store = (url = redis.url) => {
    const registry = new Registry();
    const made = new SharedStore({
      url,
      keyPrefix: `test-${process.pid}:`,
      commandTimeoutMs: 250,
      registry,
      logger: silentLogger(),
    });
    stores.push(made);
    registries.set(made, registry);
    return made;
  };

  beforeAll(async () => {
    redis = await startRedis();
  });

  afterAll(async () => {
    for (const s of stores) await s.close();
    await redis?.stop();
  });

  it("holds a sender to transactionLimit over every replica: one bucket, whichever takes from it", async () => {
    const [a, b] = [store(), store()].map(
      (s) => new RedisRateLimiter({ store: s, kind: "tx", ratePerSecond: 0.01, burst: 3 }),
    );
    const sender = "0x00000000000000000000000000000000000000aa";
    await waitFor(async () => (await a!.take("0xwarm", 1)).ok && stores.every((s) => s.ready));
    const verdicts = [];
    for (let i = 0; i < 6; i++) verdicts.push(await (i % 2 === 0 ? a! : b!).take(sender, 1));
    expect(verdicts.map((v) => v.ok)).toEqual([true, true, true, false, false, false]);
    const refused = verdicts[3]!;
    // At 0.01/s one transaction takes 100 s to come back.
    expect(!refused.ok && refused.retryAfterMs).toBeGreaterThan(90_000);
  });

  it("lets the connections of a replica that died stop counting once their leases expire", async () => {
    const dead = new RedisLeaseCap({ store: store(), pool: "ws-test", max: 2, ttlMs: 600 });
    const aliveStore = store();
    const alive = new RedisLeaseCap({ store: aliveStore, pool: "ws-test", max: 2, ttlMs: 600 });
    await waitFor(() => stores.every((s) => s.ready));
    expect(await dead.acquire("10.1.0.1")).toBe(true);
    expect(await dead.acquire("10.1.0.1")).toBe(true);
    expect(await alive.acquire("10.1.0.1")).toBe(false);
    // The first replica dies: nothing renews its leases any more.
    dead.close();
    await waitFor(async () => await alive.acquire("10.1.0.1"), {
      what: "the dead replica's leases to expire",
    });
    // The living replica renews its own: its lease's expiry moves on, well past several lease times.
    const expiry = async () =>
      Number((await aliveStore.redis.zrange("ws-test:10.1.0.1", -1, -1, "WITHSCORES"))[1] ?? 0);
    const first = await expiry();
    await waitFor(async () => (await expiry()) > first + 3 * 600, {
      what: "the lease renewed past three lease times",
    });
    expect(await alive.acquire("10.1.0.1")).toBe(true);
    expect(await alive.acquire("10.1.0.1")).toBe(false);
    alive.close();
  });

  it("never answers a head below one another replica answered, and shares one round trip among concurrent calls", async () => {
    const [ahead, behind] = [store(), store()];
    await waitFor(() => stores.every((s) => s.ready));
    const network = `net-${Date.now()}`;
    const a = new SharedHead({ store: ahead!, network, waitForHead: async () => undefined });
    const b = new SharedHead({ store: behind!, network, waitForHead: async () => 98 });
    expect(await a.head(100)).toBe(100);
    // The replica behind waits for its nodes (here: they stay at 98), then answers the shared head anyway.
    expect(await b.head(97)).toBe(100);
    const before = await scriptCalls(behind!);
    const answers = await Promise.all(Array.from({ length: 50 }, () => b.head(101)));
    const after = await scriptCalls(behind!);
    expect(new Set(answers)).toEqual(new Set([101]));
    // 50 calls, at most three round trips: the one under way and the one begun after it (plus a raise at most).
    expect(after - before).toBeLessThanOrEqual(3);
    expect(await a.head(100)).toBe(101);
    a.close();
    b.close();
  });

  it("keeps the mark in memory once subscribed: no round trip per call, another replica's raise known at once", async () => {
    const [one, other] = [store(), store()];
    await waitFor(() => stores.every((s) => s.ready));
    const network = `cached-${Date.now()}`;
    const a = new SharedHead({ store: one!, network, waitForHead: async () => undefined });
    const b = new SharedHead({ store: other!, network, waitForHead: async () => undefined });
    // Once both follow the channel (after their first read), a call at the mark is answered synchronously.
    expect(await a.raise(200)).toBe(200);
    await waitFor(() => a.following && b.following, { what: "both replicas following the mark" });
    const trips = async () => (await headRoundTrips(one!)) + (await headRoundTrips(other!));
    const before = await trips();
    for (let i = 0; i < 200; i++) {
      expect(a.head(200)).toBe(200);
      expect(b.head(200)).toBe(200);
    }
    // A raise is one write, and the other replica knows it as soon as the message is in: the next call there
    // answers at least the raised mark (here after its own nodes' short wait), with no read of its own.
    expect(a.raise(200)).toBeUndefined();
    expect(await a.raise(205)).toBe(205);
    await waitFor(() => b.current(200) === 205, { what: "the raise published to the other replica" });
    expect(await b.head(200)).toBe(205);
    expect(b.head(205)).toBe(205);
    expect(await trips()).toBe(before + 1);
    a.close();
    b.close();
  });

  it("admits every call while Redis is away (fails open), at once", async () => {
    const limiter = new RedisRateLimiter({ store: store(), kind: "rate", ratePerSecond: 1, burst: 1 });
    await waitFor(() => stores.every((s) => s.ready));
    expect((await limiter.take("10.2.0.1", 1)).ok).toBe(true);
    expect((await limiter.take("10.2.0.1", 1)).ok).toBe(false);
    await redis.kill();
    const started = Date.now();
    for (let i = 0; i < 5; i++) expect((await limiter.take("10.2.0.1", 1)).ok).toBe(true);
    expect(Date.now() - started).toBeLessThan(2_000);
    await redis.restart();
    await waitFor(async () => !(await limiter.take("10.2.0.1", 5)).ok, { what: "the limit applied again" });
  });

  it("follows the mark again when its subscriber connection comes back before its command connection", async () => {
    const one = store();
    const watcher = store();
    await waitFor(() => stores.every((s) => s.ready));
    const network = `order-${Date.now()}`;
    const a = new SharedHead({ store: one, network, waitForHead: async () => undefined });
    await a.raise(400);
    await waitFor(() => a.following, { what: "the replica following the mark" });
    // The command connection down (for good, until connected again by hand), then the subscriber's connection cut
    // by Redis: it reconnects and subscribes while the mark cannot be read.
    one.redis.disconnect();
    await waitFor(() => !one.ready, { what: "the command connection closed" });
    await watcher.redis.client("KILL", "TYPE", "pubsub");
    await waitFor(() => !a.following, { what: "the subscription lost" });
    await waitFor(
      async () =>
        Number(
          await watcher.redis.pubsub("NUMSUB", `test-${process.pid}:head:${network}`).then((r) => r[1]),
        ) === 1,
      {
        what: "the subscriber back on Redis",
      },
    );
    await one.redis.connect();
    await waitFor(() => a.following, { what: "the mark read again once the command connection is back" });
    a.close();
  });

  it("notices a subscriber connection that stalls without closing, and follows the mark again on a new one", async () => {
    // The replica's connections to Redis go through a proxy that can go silent on its subscriber connection alone.
    const proxy = await startStallingProxy(redis.port);
    const one = store(`redis://127.0.0.1:${proxy.port}`);
    try {
      const other = store();
      await waitFor(() => stores.every((s) => s.ready));
      const network = `stall-${Date.now()}`;
      const a = new SharedHead({ store: one, network, waitForHead: async () => undefined });
      const b = new SharedHead({ store: other, network, waitForHead: async () => undefined });
      expect(await a.raise(500)).toBe(500);
      await waitFor(() => a.following && b.following, { what: "both replicas following the mark" });
      expect(proxy.stall("lightfleet-gateway-subscriber")).toBe(1);
      // Another replica raises the mark: the message never reaches the stalled connection, and commands on the
      // replica's other connection still work.
      expect(await b.raise(510)).toBe(510);
      expect(await one.redis.get(`head:${network}`)).toBe("510");
      // Within the subscriber's PING deadline the replica stops answering from its old mark...
      await waitFor(async () => (await a.current(500)) === 510, {
        what: "the stalled replica to answer the raised mark",
        timeoutMs: 10_000,
      });
      expect(await a.head(500)).toBe(510);
      // ...reconnects its subscriber (the stalled socket is left as it is: nothing closed it on the way), reads the
      // mark again and follows it from memory.
      expect(proxy.stalledOpen()).toBe(1);
      await waitFor(() => a.following, {
        what: "the replica following the mark on a new subscriber connection",
      });
      expect(a.current(500)).toBe(510);
      expect(await b.raise(520)).toBe(520);
      await waitFor(() => a.current(500) === 520, {
        what: "a raise published to the new subscriber connection",
      });
      const stale = await registries
        .get(one)!
        .getSingleMetric("lightfleet_gateway_shared_store_subscriber_stale_total")
        ?.get();
      expect(stale?.values[0]?.value).toBe(1);
      a.close();
      b.close();
    } finally {
      // Gone with its proxy: the tests after this one wait for every store left to be connected.
      await one.close();
      stores.splice(stores.indexOf(one), 1);
      await proxy.close();
    }
  });

  it("stops trusting its cached mark while Redis is away, and follows it again once Redis is back", async () => {
    const [one, other] = [store(), store()];
    await waitFor(() => stores.every((s) => s.ready));
    const network = `restart-${Date.now()}`;
    const a = new SharedHead({ store: one!, network, waitForHead: async () => undefined });
    const b = new SharedHead({ store: other!, network, waitForHead: async () => undefined });
    await a.raise(300);
    await waitFor(() => a.following && b.following, { what: "both replicas following the mark" });
    await redis.kill();
    await waitFor(() => !a.following && !b.following, { what: "the subscriptions lost" });
    // No call waits: each answers from its own head and the last mark it read.
    const started = Date.now();
    expect(await a.head(302)).toBe(302);
    expect(await b.head(299)).toBe(300);
    expect(Date.now() - started).toBeLessThan(2_000);
    await redis.restart();
    await waitFor(() => a.following && b.following, { what: "both replicas following the mark again" });
    // A raise after the restart reaches the other replica's memory.
    expect(await a.raise(310)).toBe(310);
    await waitFor(() => b.current(300) === 310, { what: "the raise published after the restart" });
    a.close();
    b.close();
  });
});
