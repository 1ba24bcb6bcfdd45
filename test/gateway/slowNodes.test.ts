import type { Registry } from "prom-client";
import { afterEach, describe, expect, it } from "vitest";
import type { Devnet } from "../../src/devnet/devnet.js";
import { DEV_ACCOUNT } from "../../src/devnet/devTransactions.js";
import type { Gateway } from "../../src/gateway/gateway.js";
import { startTestDevnet } from "../support/devnet.js";
import { waitFor } from "../support/waitFor.js";
import { CHAIN_ID, NETWORK, post, startTestGateway, waitForServedHead } from "./support.js";
import type { Json } from "./support.js";

/** A SIGSTOPped node is continued when its test ends, whatever happened, so it can be stopped. */
const stopped: number[] = [];
afterEach(() => {
  for (const pid of stopped.splice(0)) process.kill(pid, "SIGCONT");
});

async function metric(registry: Registry, name: string, labels: Record<string, string>): Promise<number> {
  const values = (await registry.getSingleMetric(name)?.get())?.values ?? [];
  return values
    .filter((v) => Object.entries(labels).every(([k, want]) => v.labels[k] === want))
    .reduce((sum, v) => sum + v.value, 0);
}

/** The reads a dapp makes, in turn: state at latest, and a block by number. */
function read(i: number, head: number): Json {
  const method = ["eth_call", "eth_getBalance", "eth_getBlockByNumber"][i % 3]!;
  const params =
    method === "eth_call"
      ? [{ to: DEV_ACCOUNT, data: "0x" }, "latest"]
      : method === "eth_getBalance"
        ? [DEV_ACCOUNT, "latest"]
        : [`0x${Math.max(1, head - (i % 3)).toString(16)}`, false];
  return { jsonrpc: "2.0", id: i, method, params };
}

interface LoadResult {
  errors: Json[];
  durations: number[];
}

/** `rounds` rounds of `concurrency` single reads at once; every answer is checked and timed. */
async function readLoad(gateway: Gateway, devnet: Devnet, rounds: number, concurrency: number) {
  const result: LoadResult = { errors: [], durations: [] };
  const head = devnet.head(NETWORK).number;
  for (let round = 0; round < rounds; round++) {
    await Promise.all(
      Array.from({ length: concurrency }, async (_, k) => {
        const started = performance.now();
        const { body } = await post(gateway.url, read(round * concurrency + k, head));
        result.durations.push(performance.now() - started);
        if (body?.error || body?.result === undefined || body.result === null) result.errors.push(body);
      }),
    );
  }
  return result;
}

const p = (sorted: number[], q: number) => sorted[Math.ceil(q * sorted.length) - 1]!;

async function threeNodeGateway(gatewaySettings: Record<string, unknown> = {}, network = {}) {
  const devnet = await startTestDevnet({
    networks: [{ name: NETWORK, chainId: CHAIN_ID, fullNodes: 1, lightNodes: 3 }],
    latencyFronts: true,
  });
  for (let i = 0; i < 3; i++) await devnet.mine(NETWORK);
  const started = await startTestGateway(devnet, { upstreamTimeout: "10s", ...gatewaySettings }, network);
  await waitForServedHead(started.gateway, devnet);
  return { devnet, ...started };
}

describe("slow, hung and dead light nodes", () => {
  it("a SIGSTOPped node costs no client an error, and no read waits past 2 s", async () => {
    const { devnet, gateway } = await threeNodeGateway();
    try {
      // The gateway learns how quickly each node answers.
      expect((await readLoad(gateway, devnet, 10, 6)).errors).toEqual([]);
      const pid = devnet.status().nodes.find((n) => n.name === `${NETWORK}-light-0`)!.pid!;
      process.kill(pid, "SIGSTOP");
      stopped.push(pid);
      const load = await readLoad(gateway, devnet, 8, 6);
      expect(load.errors.map((e) => e?.error?.message ?? e)).toEqual([]);
      expect(Math.max(...load.durations)).toBeLessThan(2_000);
    } finally {
      await gateway.stop();
    }
  }, 90_000);

  it("with 2 of 3 nodes killed at once, every read is answered", async () => {
    const { devnet, gateway } = await threeNodeGateway();
    try {
      expect((await readLoad(gateway, devnet, 5, 6)).errors).toEqual([]);
      await Promise.all([
        devnet.fault(`${NETWORK}-light-0`, { kind: "kill" }),
        devnet.fault(`${NETWORK}-light-1`, { kind: "kill" }),
      ]);
      const load = await readLoad(gateway, devnet, 10, 12);
      expect(load.errors.map((e) => e?.error?.message ?? e)).toEqual([]);
    } finally {
      await gateway.stop();
    }
  });

  it("with one node slow, reads see no error and a p99 well under the slow node's (hedged within budget)", async () => {
    const { devnet, gateway, registry } = await threeNodeGateway();
    try {
      await devnet.fault(`${NETWORK}-light-0`, { kind: "slow", profile: "light", seed: 5 });
      // As a gateway that has been serving a while: it has learnt how each node answers.
      expect((await readLoad(gateway, devnet, 15, 6)).errors).toEqual([]);
      const load = await readLoad(gateway, devnet, 50, 6);
      expect(load.errors.map((e) => e?.error?.message ?? e)).toEqual([]);
      const sorted = [...load.durations].sort((a, b) => a - b);
      // The slow node's own p99 is 2 s.
      expect(p(sorted, 0.99)).toBeLessThan(1_000);
      // A call's losing attempts are still out when its client has the answer, and an upstream call is counted by
      // its outcome: the counts are read once every attempt is settled, or the calls still out on the slow node are
      // missing from the budget's base while their hedges are counted.
      await waitFor(async () => (await metric(registry, "lightfleet_gateway_upstream_in_flight", {})) === 0, {
        // At most the upstream timeout (10 s) after the last attempt went.
        timeoutMs: 20_000,
        what: "every upstream call of the load settled",
      });
      const sent = await metric(registry, "lightfleet_gateway_hedges_total", { outcome: "sent" });
      const slowMoves = await metric(registry, "lightfleet_gateway_retries_total", { reason: "slow" });
      const owed = await metric(registry, "lightfleet_gateway_retries_total", { reason: "stuck" });
      // A retry after a node failed is not a budgeted call (the read has no attempt left in flight): not extra here.
      const failed = await metric(registry, "lightfleet_gateway_retries_total", { reason: "failed" });
      const upstream = await metric(registry, "lightfleet_gateway_upstream_requests_total", {});
      expect(sent).toBeGreaterThan(0);
      // At most 10% extra calls (hedges and moves) over the clients' calls that reached a node, from the start,
      // plus the moves a read could not do without (owed to the budget).
      const extra = sent + slowMoves + owed;
      expect(extra).toBeLessThanOrEqual(Math.floor(0.1 * (upstream - extra - failed)) + owed);
    } finally {
      await gateway.stop();
    }
  });

  it("sends no hedge beyond the budget, and none when hedging is off", async () => {
    const spent = await threeNodeGateway({}, { hedge: { budget: 0 } });
    try {
      await spent.devnet.fault(`${NETWORK}-light-0`, { kind: "slow", profile: "severe", seed: 3 });
      expect((await readLoad(spent.gateway, spent.devnet, 10, 6)).errors).toEqual([]);
      expect(await metric(spent.registry, "lightfleet_gateway_hedges_total", { outcome: "sent" })).toBe(0);
      expect(
        await metric(spent.registry, "lightfleet_gateway_hedges_total", { outcome: "budget_refused" }),
      ).toBeGreaterThan(0);
    } finally {
      await spent.gateway.stop();
    }
    const off = await threeNodeGateway({}, { hedge: { enabled: false } });
    try {
      await off.devnet.fault(`${NETWORK}-light-0`, { kind: "slow", profile: "severe", seed: 3 });
      expect((await readLoad(off.gateway, off.devnet, 10, 6)).errors).toEqual([]);
      expect(await metric(off.registry, "lightfleet_gateway_hedges_total", {})).toBe(0);
    } finally {
      await off.gateway.stop();
    }
  });
});
