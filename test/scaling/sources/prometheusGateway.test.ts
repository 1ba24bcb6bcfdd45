import autocannon from "autocannon";
import { Registry } from "prom-client";
import { afterEach, describe, expect, it } from "vitest";
import { startAdminServer } from "../../../src/admin/adminServer.js";
import { parseConfig } from "../../../src/config/loadConfig.js";
import { DEV_ACCOUNT } from "../../../src/devnet/devTransactions.js";
import { startGateway } from "../../../src/gateway/gateway.js";
import { StaticUpstreamSource } from "../../../src/gateway/upstreams/staticSource.js";
import { silentLogger } from "../../../src/log/logger.js";
import { PrometheusSource } from "../../../src/scaling/sources/prometheusSource.js";
import { startTestDevnet } from "../../support/devnet.js";
import { waitFor } from "../../support/waitFor.js";
import { startPrometheus } from "../prometheusServer.js";

describe("the Prometheus source on a real gateway under load", () => {
  const cleanup: Array<() => unknown> = [];
  afterEach(async () => {
    for (const fn of cleanup.splice(0).reverse()) await fn();
  });

  it("reads the request rate Prometheus scraped from the gateway's /metrics", async () => {
    const devnet = await startTestDevnet({ networks: [{ name: "devnet", chainId: 31_337, lightNodes: 1 }] });
    for (let i = 0; i < 3; i++) await devnet.mine("devnet");
    const light = devnet.nodes("devnet").find((n) => n.role === "light")!;
    const config = parseConfig({
      gateway: { host: "127.0.0.1", port: 0 },
      networks: [
        {
          name: "devnet",
          chainId: 31_337,
          reservedPeers: [{ name: "light", http: light.httpUrl }],
          gateway: { default: true },
        },
      ],
    });
    const registry = new Registry();
    const logger = silentLogger();
    const gateway = await startGateway({
      config,
      source: new StaticUpstreamSource([
        { name: light.name, network: "devnet", httpUrl: light.httpUrl, wsUrl: light.wsUrl, routed: true },
      ]),
      logger,
      registry,
    });
    cleanup.push(() => gateway.stop());
    const admin = await startAdminServer({ host: "127.0.0.1", port: 0, registry, logger });
    cleanup.push(() => admin.close());
    const prometheus = await startPrometheus({ targets: [new URL(admin.url).host], scrapeInterval: "250ms" });
    cleanup.push(() => prometheus.stop());

    // 100 req/s through the gateway, 20 s at most (stopped as soon as the rate is read).
    let load: autocannon.Instance | undefined;
    const loaded = new Promise<autocannon.Result>((resolve, reject) => {
      load = autocannon(
        {
          url: `${gateway.url}/`,
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({
            jsonrpc: "2.0",
            id: 1,
            method: "eth_getBalance",
            params: [DEV_ACCOUNT, "latest"],
          }),
          connections: 2,
          overallRate: 100,
          duration: 20,
        },
        (error, result) => (error ? reject(error as Error) : resolve(result)),
      );
    });
    cleanup.push(() => load?.stop());

    const source = new PrometheusSource({
      url: prometheus.url,
      query: 'sum(rate(lightfleet_gateway_upstream_requests_total{network="{network}"}[3s]))',
    });
    const reading = await waitFor(
      async () => {
        const r = await source.read("devnet");
        return r.ok && Math.abs(r.requestsPerSecond - 100) < 25 ? r : undefined;
      },
      { timeoutMs: 15_000, intervalMs: 250, what: "a rate near 100 req/s from Prometheus" },
    );
    expect(reading.ok).toBe(true);
    load!.stop();
    const result = await loaded;
    expect(result.errors + result.non2xx + result.timeouts).toBe(0);
    // The gateway counted every answer autocannon saw (and at most the two in flight when it stopped).
    const counted = gateway.requestTotals().get("devnet") ?? 0;
    expect(counted).toBeGreaterThanOrEqual(result.requests.total);
    expect(counted).toBeLessThanOrEqual(result.requests.total + 2);
  });
});
