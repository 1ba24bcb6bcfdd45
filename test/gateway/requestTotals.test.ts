import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Counter, Registry } from "prom-client";
import { DEV_ACCOUNT } from "../../src/devnet/devTransactions.js";
import type { Gateway } from "../../src/gateway/gateway.js";
import { sumRequestsByNetwork } from "../../src/scaling/sources/gatewayScrapeSource.js";
import { startTestDevnet } from "../support/devnet.js";
import { NETWORK, post, startTestGateway, waitForServedHead } from "./support.js";

/** The autoscaler's reading of the gateway, in-process (`up`) and scraped (Kubernetes) alike: calls nodes served. */
describe("the request count the autoscaler reads", () => {
  let gateway: Gateway;
  let registry: Registry;

  beforeAll(async () => {
    const devnet = await startTestDevnet({
      networks: [{ name: NETWORK, chainId: 31_337, fullNodes: 1, lightNodes: 1 }],
    });
    await devnet.mine(NETWORK);
    ({ gateway, registry } = await startTestGateway(devnet, {
      rateLimit: { requestsPerSecond: 0.01, burst: 30 },
    }));
    await waitForServedHead(gateway, devnet);
  });

  afterAll(async () => {
    await gateway?.stop();
  });

  const counted = async () => ({
    inProcess: gateway.requestTotals().get(NETWORK) ?? 0,
    scraped: sumRequestsByNetwork(await registry.metrics()).get(NETWORK) ?? 0,
  });
  const calls = (method: string, count: number, params: unknown[] = []) =>
    Array.from({ length: count }, (_, id) => ({ jsonrpc: "2.0", id, method, params }));

  it("leaves out what the gateway answers itself and what it refuses, counts what a node serves", async () => {
    const before = await counted();
    // Answered from the served head and the configured chain id, refused by policy, or invalid: no node involved.
    await post(gateway.url, [
      ...calls("eth_blockNumber", 10),
      ...calls("eth_chainId", 5),
      ...calls("admin_peers", 3),
      ...calls("eth_getLogs", 2, [{ fromBlock: "0x10", toBlock: "0x1" }]),
    ]);
    expect(await counted()).toEqual(before);
    // Served by a node: counted once each.
    await post(gateway.url, calls("eth_getBalance", 7, [DEV_ACCOUNT, "latest"]));
    expect(await counted()).toEqual({ inProcess: before.inProcess + 7, scraped: before.scraped + 7 });
    // Refused by the rate limit (the budget of 30 is spent): not counted either.
    const refused = await post(gateway.url, calls("eth_getBalance", 5, [DEV_ACCOUNT, "latest"]));
    expect(refused.status).toBe(429);
    expect(await counted()).toEqual({ inProcess: before.inProcess + 7, scraped: before.scraped + 7 });
  });

  it("reads a scrape as the node calls of every gateway, not the calls the gateways answered", async () => {
    const scraped = new Registry();
    new Counter({
      name: "lightfleet_gateway_requests_total",
      help: "answered",
      labelNames: ["network", "method", "outcome"],
      registers: [scraped],
    }).inc({ network: "mainnet", method: "eth_blockNumber", outcome: "ok" }, 1_000);
    new Counter({
      name: "lightfleet_gateway_upstream_requests_total",
      help: "node calls",
      labelNames: ["network", "upstream", "outcome"],
      registers: [scraped],
    }).inc({ network: "mainnet", upstream: "light-0", outcome: "ok" }, 12);
    expect(sumRequestsByNetwork(await scraped.metrics())).toEqual(new Map([["mainnet", 12]]));
  });
});
