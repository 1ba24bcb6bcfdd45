import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { POOL_KEY_LABELS } from "../../../src/kubernetes/controller/poolKey.js";
import { createScalingMetrics } from "../../../src/metrics/scalingMetrics.js";
import { PrometheusSource, promqlFor } from "../../../src/scaling/sources/prometheusSource.js";
import { waitFor } from "../../support/waitFor.js";
import { GatewayCounterServer } from "../gatewayCounterServer.js";
import { startPrometheus, type PrometheusServer } from "../prometheusServer.js";

// A short range so the rate settles within seconds; rate() needs two scrapes in range.
const QUERY = 'sum(rate(lightfleet_gateway_upstream_requests_total{network="{network}"}[3s]))';

describe("PrometheusSource against a real Prometheus", () => {
  const gateway = new GatewayCounterServer();
  let prometheus: PrometheusServer | undefined;

  beforeAll(async () => {
    await gateway.start();
    gateway.serve("mainnet", 0);
    // 200 req/s of mainnet traffic until afterAll stops it.
    gateway.steadyLoad("mainnet", 200);
    // The cluster controller's exported decisions, served beside the counter, for the queries KEDA and an HPA adapter
    // use: the same network in two namespaces, told apart by pool_namespace.
    const exported = createScalingMetrics(gateway.registry, POOL_KEY_LABELS);
    exported.observe("lightfleet/mainnet", { rate: 200, desired: 4, floor: 2 });
    exported.observe("staging/mainnet", { rate: 7, desired: 1, floor: 1 });
    prometheus = await startPrometheus({ targets: [`127.0.0.1:${gateway.port}`], scrapeInterval: "250ms" });
  }, 60_000);

  afterAll(async () => {
    await prometheus?.stop();
    await gateway.stop();
  });

  it("reads a gateway's request rate through the query API", async () => {
    const source = new PrometheusSource({ url: prometheus!.url, query: QUERY, timeoutMs: 2_000 });
    const reading = await waitFor(
      async () => {
        const r = await source.read("mainnet");
        return r.ok && Math.abs(r.requestsPerSecond - 200) < 40 ? r : undefined;
      },
      { timeoutMs: 20_000, intervalMs: 250, what: "a rate near 200 req/s from Prometheus" },
    );
    expect(reading.ok).toBe(true);
  });

  it("reports a network without series as a failure, not as no traffic", async () => {
    const source = new PrometheusSource({ url: prometheus!.url, query: QUERY });
    await waitFor(async () => (await source.read("mainnet")).ok, {
      timeoutMs: 20_000,
      what: "mainnet series",
    });
    expect(await source.read("sepolia")).toEqual({
      ok: false,
      failed: true,
      reason:
        'PromQL returned no series: sum(rate(lightfleet_gateway_upstream_requests_total{network="sepolia"}[3s]))',
    });
  });

  it("reports Prometheus' own error for a bad expression and a range result", async () => {
    const bad = await new PrometheusSource({ url: prometheus!.url, query: "sum(rate(" }).read("mainnet");
    expect(bad).toMatchObject({ ok: false, failed: true });
    expect(!bad.ok && bad.reason).toMatch(/^Prometheus query error \(bad_data\): .*parse error/);
    const range = await new PrometheusSource({
      url: prometheus!.url,
      query: 'lightfleet_gateway_upstream_requests_total{network="{network}"}[5s]',
    }).read("mainnet");
    expect(range).toEqual({
      ok: false,
      failed: true,
      reason: "PromQL must give a scalar or an instant vector, not a matrix",
    });
  });

  it("answers the chart's KEDA queries on the controller's exported metrics", async () => {
    const rate = new PrometheusSource({
      url: prometheus!.url,
      query: 'max(lightfleet_pool_request_rate{pool_namespace="lightfleet",network="{network}"})',
    });
    const desired = new PrometheusSource({
      url: prometheus!.url,
      query: 'max(lightfleet_pool_desired_replicas{pool_namespace="lightfleet",network="{network}"})',
    });
    await waitFor(async () => (await rate.read("mainnet")).ok, {
      timeoutMs: 20_000,
      what: "the exported rate",
    });
    expect(await rate.read("mainnet")).toEqual({ ok: true, requestsPerSecond: 200 });
    expect(await desired.read("mainnet")).toEqual({ ok: true, requestsPerSecond: 4 });
    // A pool's own PromQL template names its namespace too.
    const staging = new PrometheusSource({
      url: prometheus!.url,
      query: (network) =>
        promqlFor(
          'max(lightfleet_pool_request_rate{pool_namespace="{namespace}",network="{network}"})',
          network,
          "staging",
        ),
    });
    expect(await staging.read("mainnet")).toEqual({ ok: true, requestsPerSecond: 7 });
  });

  it("reads a scalar expression", async () => {
    const reading = await new PrometheusSource({ url: prometheus!.url, query: "scalar(vector(42))" }).read(
      "mainnet",
    );
    expect(reading).toEqual({ ok: true, requestsPerSecond: 42 });
  });
});

describe("PrometheusSource without a Prometheus", () => {
  it("reports a refused connection and a non-Prometheus answer as failures", async () => {
    const gateway = new GatewayCounterServer();
    const url = (await gateway.start()).replace("/metrics", "");
    try {
      const notPrometheus = await new PrometheusSource({ url, query: "up" }).read("mainnet");
      expect(notPrometheus).toEqual({
        ok: false,
        failed: true,
        reason: "Prometheus answered HTTP 404 without JSON",
      });
    } finally {
      await gateway.stop();
    }
    const refused = await new PrometheusSource({ url, query: "up", timeoutMs: 1_000 }).read("mainnet");
    expect(refused).toMatchObject({ ok: false, failed: true });
    expect(!refused.ok && refused.reason).toMatch(/^Prometheus query failed: fetch failed \(.*ECONNREFUSED/);
  });
});
