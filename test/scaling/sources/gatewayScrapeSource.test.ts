import { afterEach, describe, expect, it } from "vitest";
import { GatewayScrapeSource } from "../../../src/scaling/sources/gatewayScrapeSource.js";
import { GatewayCounterServer } from "../gatewayCounterServer.js";

describe("GatewayScrapeSource", () => {
  const servers: GatewayCounterServer[] = [];
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((s) => s.stop()));
  });

  async function gateways(count: number): Promise<GatewayCounterServer[]> {
    const started = Array.from({ length: count }, () => new GatewayCounterServer());
    servers.push(...started);
    await Promise.all(started.map((s) => s.start()));
    return started;
  }

  it("adds up the requests of every gateway pod over the window, per network", async () => {
    const [a, b] = await gateways(2);
    let now = 1_000_000;
    const source = new GatewayScrapeSource({
      discover: () => [a!.metricsUrl, b!.metricsUrl],
      clock: () => now,
      windowMs: () => 60_000,
    });
    a!.serve("mainnet", 1_000);
    expect(await source.read("mainnet")).toMatchObject({ ok: false, failed: false });
    expect(await source.read("sepolia")).toMatchObject({ ok: false, failed: false });
    now += 10_000;
    a!.serve("mainnet", 300, "eth_call");
    a!.serve("mainnet", 100, "eth_call", "error");
    b!.serve("mainnet", 600);
    b!.serve("sepolia", 50);
    expect(await source.read("mainnet")).toEqual({ ok: true, requestsPerSecond: 100 });
    // The same scrape serves the other pool.
    expect(await source.read("sepolia")).toEqual({ ok: true, requestsPerSecond: 5 });
  });

  it("fails when any gateway pod cannot be scraped, when none is found, or when discovery fails", async () => {
    const [a, b] = await gateways(2);
    let now = 0;
    let urls = [a!.metricsUrl, b!.metricsUrl];
    let discoveryError: Error | undefined = undefined;
    const source = new GatewayScrapeSource({
      discover: () => {
        if (discoveryError) throw discoveryError;
        return urls;
      },
      clock: () => now,
      windowMs: () => 60_000,
      timeoutMs: 500,
    });
    await source.read("mainnet");
    b!.failWith = 503;
    now += 5_000;
    expect(await source.read("mainnet")).toEqual({
      ok: false,
      failed: true,
      reason: `${b!.metricsUrl}: HTTP 503`,
    });
    const port = b!.port;
    await b!.stop();
    now += 5_000;
    const refused = await source.read("mainnet");
    expect(refused).toMatchObject({ ok: false, failed: true });
    expect(!refused.ok && refused.reason).toContain(`127.0.0.1:${port}`);
    urls = [];
    now += 5_000;
    expect(await source.read("mainnet")).toMatchObject({ ok: false, reason: "no gateway pod found" });
    discoveryError = new Error("endpointslices is forbidden");
    now += 5_000;
    expect(await source.read("mainnet")).toMatchObject({
      ok: false,
      reason: "gateway discovery failed: endpointslices is forbidden",
    });
  });

  it("reports a pod that serves something else than the exposition format", async () => {
    const [a] = await gateways(1);
    a!.body = "<html>not metrics</html>\n";
    const source = new GatewayScrapeSource({
      discover: () => [a!.metricsUrl],
      clock: () => 0,
      windowMs: () => 60_000,
    });
    const reading = await source.read("mainnet");
    expect(reading).toEqual({
      ok: false,
      failed: true,
      reason: `${a!.metricsUrl}: line 1: expected a metric name`,
    });
  });
});
