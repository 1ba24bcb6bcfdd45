import { Registry } from "prom-client";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { hedgeSchema, hungNodesSchema } from "../../../src/config/sections/latency.js";
import { latencySampler, seededRandom, SLOW_PROFILES } from "../../../src/devnet/latencyProfile.js";
import { NodeCalls } from "../../../src/gateway/pipeline/nodeCalls.js";
import type { Candidate } from "../../../src/gateway/upstreams/balancer.js";
import type { Upstreams } from "../../../src/gateway/upstreams/upstreams.js";
import { createGatewayMetrics } from "../../../src/metrics/gatewayMetrics.js";
import { RpcTransportError } from "../../../src/rpc/jsonRpc.js";

beforeEach(() => {
  vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "Date"] });
});
afterEach(() => {
  vi.useRealTimers();
});

/**
 * Three routed nodes that answer every call after a delay drawn from the devnet's `light` profile (log-normal, p50
 * 50 ms, p99 2 s), from one seeded generator: the same delays, in the same order, every run. Counts the calls sent.
 */
function slowFleet(
  seed: number,
  /** A node's delay for one call, when not the light profile's; Infinity: it never answers. */
  delayOf?: (node: string, nth: number) => number | undefined,
): { upstreams: Upstreams; calls: () => number } {
  const light = latencySampler(SLOW_PROFILES.light, seededRandom(seed));
  /** Calls each node got so far. */
  const counts = new Map<string, number>();
  const delay = (node: string) => {
    counts.set(node, (counts.get(node) ?? 0) + 1);
    return delayOf?.(node, counts.get(node)!) ?? light();
  };
  const outstanding = new Map<string, number>();
  let calls = 0;
  const names = ["a", "b", "c"];
  const upstreams: Upstreams = {
    network: "sim",
    chainId: 1,
    servedHead: () => 10,
    safe: () => undefined,
    finalized: () => undefined,
    blockOfHash: () => undefined,
    servedHeightOfHash: () => undefined,
    candidates: (): Candidate[] =>
      names.map((name) => ({
        name,
        routed: true,
        reachable: true,
        head: 10,
        outstanding: outstanding.get(name) ?? 0,
      })),
    call: (name, request, timeoutMs, _raw, sink) => {
      calls++;
      const ms = delay(name);
      if (ms < timeoutMs)
        setTimeout(() => sink.answered({ jsonrpc: "2.0", id: request.id ?? null, result: "0x" }), ms);
      else setTimeout(() => sink.failed(new RpcTransportError(`${name}: timeout`, "timeout")), timeoutMs);
      return true;
    },
    acquire: (name) => {
      outstanding.set(name, (outstanding.get(name) ?? 0) + 1);
      return () => outstanding.set(name, outstanding.get(name)! - 1);
    },
    on: () => undefined,
  };
  return { upstreams, calls: () => calls };
}

/**
 * `count` eth_calls from 8 clients in a closed loop through NodeCalls over the slow fleet, from a fresh start, on the
 * fake clock: the calls sent to the nodes beyond the clients' own, the hedges and moves off hung nodes among them, and
 * the clients' p99, worst latency and errors.
 */
async function run(
  hedge: object,
  count: number,
  seed = 11,
  delayOf?: (node: string, nth: number) => number | undefined,
) {
  const { upstreams, calls } = slowFleet(seed, delayOf);
  const registry = new Registry();
  const nodes = new NodeCalls({
    upstreams,
    upstreamTimeoutMs: 10_000,
    metrics: createGatewayMetrics(registry),
    count: () => undefined,
    hedge: hedgeSchema.parse(hedge),
    hungNodes: hungNodesSchema.parse({}),
    transactionPeers: [],
    blockTimeMs: 1_000,
    now: () => Date.now(),
  });
  const latencies: number[] = [];
  let next = 0;
  const errors: unknown[] = [];
  const clients = Array.from({ length: 8 }, async () => {
    while (next < count) {
      const id = next++;
      const started = Date.now();
      const { response } = await nodes.send(
        {
          kind: "forward",
          request: { jsonrpc: "2.0", id, method: "eth_call", params: [{}, "latest"] },
          minBlock: undefined,
        },
        false,
      );
      latencies.push(Date.now() - started);
      if ("error" in response) errors.push(response.error);
    }
  });
  let finished = false;
  const all = Promise.all(clients).then(() => (finished = true));
  while (!finished) await vi.advanceTimersByTimeAsync(5);
  await all;
  latencies.sort((x, y) => x - y);
  const counted = async (name: string, label: string, value: string) =>
    (await registry.getSingleMetric(name)!.get()).values
      .filter((v) => v.labels[label] === value)
      .reduce((sum, v) => sum + v.value, 0);
  return {
    extra: calls() - count,
    hedges: await counted("lightfleet_gateway_hedges_total", "outcome", "sent"),
    owedMoves: await counted("lightfleet_gateway_retries_total", "reason", "stuck"),
    p99: latencies[Math.ceil(0.99 * count) - 1]!,
    max: latencies.at(-1)!,
    errors,
  };
}

describe("NodeCalls over slow nodes", () => {
  it("adds at most budget x calls extra upstream calls from a fresh start, hedges and moves off hung nodes together", async () => {
    for (const calls of [50, 400, 1_500]) {
      const { extra, owedMoves } = await run({ budget: 0.1 }, calls);
      // Plus the moves a read could not do without (every attempt of it on a node that answered nothing for its
      // bound): they go even with the budget spent, owed to it and paid back by the calls after; at the end of a
      // run some may still be owed. Few: these nodes never hang, they only leave a read waiting now and then.
      expect(extra, `${calls} calls`).toBeLessThanOrEqual(Math.floor(0.1 * calls) + owedMoves);
      expect(owedMoves, `${calls} calls`).toBeLessThanOrEqual(Math.max(2, 0.01 * calls));
    }
  });

  it("hedges sooner for a bigger budget, so that budget buys a lower p99", async () => {
    const small = await run({ budget: 0.1 }, 1_500);
    const large = await run({ budget: 0.32 }, 1_500);
    // The trigger follows the budget: nearly all of it is spent, not only what the node's p90 allows.
    expect(large.extra).toBeGreaterThan(0.25 * 1_500);
    expect(large.extra).toBeLessThanOrEqual(0.32 * 1_500);
    expect(small.extra).toBeGreaterThan(0.07 * 1_500);
    expect(large.p99).toBeLessThan(0.85 * small.p99);
  });

  it("an explicit quantile still sets the trigger whatever the budget", async () => {
    const fixed = await run({ budget: 0.32, quantile: 0.9 }, 1_500);
    expect(fixed.extra).toBeLessThan(0.15 * 1_500);
  });

  it("moves a read off a node that answers nothing even when the budget is spent, and hedges none with it off", async () => {
    // Node a is hung (it answers nothing until the upstream timeout); b and c answer in 20 ms.
    const hung = (node: string) => (node === "a" ? Infinity : 20);
    for (const hedge of [{ budget: 0 }, { enabled: false }]) {
      const { errors, max, extra, hedges } = await run(hedge, 200, 11, hung);
      expect(errors, JSON.stringify(hedge)).toEqual([]);
      // The hung bound of a node with no history is 1.5 s; then the read's move answers in 20 ms.
      expect(max, JSON.stringify(hedge)).toBeLessThanOrEqual(1_500 + 20 + 5);
      // Only the reads sent to a before it counted as hung moved.
      expect(extra, JSON.stringify(hedge)).toBeLessThanOrEqual(8);
      expect(hedges).toBe(0);
    }
  });

  it("moves a read its node never answers while that node answers others, hedging on with the budget spent or off", async () => {
    // Slow nodes as before, but a few reads that a node never answers (until the upstream timeout, 10 s) while it
    // answers its others: no node is hung, yet those reads would wait out the timeout.
    const stalls = (_node: string, nth: number) => (nth % 50 === 20 ? Infinity : undefined);
    for (const hedge of [{ enabled: false }, { budget: 0 }]) {
      const { errors, max } = await run(hedge, 300, 11, stalls);
      expect(errors, JSON.stringify(hedge)).toEqual([]);
      // Hedging off: moved at the node's hung bound (at most 1.5 s); on with nothing to spend: at twice it (owed).
      // Either way no read waits out the upstream timeout.
      expect(max, JSON.stringify(hedge)).toBeLessThan(10_000);
    }
  });

  it("spends a larger budget on a second hedge where it buys a lower p99 than one hedge at the same cost", async () => {
    const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;
    const two: number[] = [];
    const one: number[] = [];
    for (const seed of [11, 12, 13]) {
      const twice = await run({ budget: 0.275 }, 2_000, seed);
      // The same budget, with the single trigger (1 - budget) a configured quantile gives.
      const once = await run({ budget: 0.275, quantile: 0.725 }, 2_000, seed);
      for (const r of [twice, once])
        expect(r.extra).toBeLessThanOrEqual(Math.floor(0.275 * 2_000) + r.owedMoves);
      two.push(twice.p99);
      one.push(once.p99);
    }
    expect(median(two)).toBeLessThan(0.9 * median(one));
  });
});
