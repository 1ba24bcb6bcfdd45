import { AggregatorRegistry, Histogram, Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { PendingHistogram } from "../../src/metrics/pendingHistogram.js";

const config = {
  name: "lightfleet_test_duration_seconds",
  help: "Test durations.",
  labelNames: ["network", "method"] as const,
  buckets: [0.001, 0.01, 0.1],
};
const observations: Array<[{ network: string; method: string }, number]> = [
  [{ network: "a", method: "eth_blockNumber" }, 0.0005],
  [{ network: "a", method: "eth_blockNumber" }, 0.001],
  [{ network: "a", method: "eth_blockNumber" }, 0.005],
  [{ network: "a", method: "eth_call" }, 0.05],
  [{ network: "b", method: "eth_call" }, 3],
];

/** prom-client's own Histogram given the same observations: the oracle. */
function plain(): Registry {
  const registry = new Registry();
  const histogram = new Histogram({ ...config, registers: [registry] });
  for (const [labels, value] of observations) histogram.observe(labels, value);
  return registry;
}

describe("a histogram counted in plain numbers on the hot path", () => {
  it("scrapes exactly as prom-client's Histogram given the same observations, as text and as JSON", async () => {
    const registry = new Registry();
    const histogram = new PendingHistogram({ ...config, registers: [registry] });
    // Half before a scrape, half after: counts accumulate across scrapes.
    observations.slice(0, 2).forEach(([labels, value]) => histogram.cell(labels).observe(value));
    await registry.metrics();
    observations.slice(2).forEach(([labels, value]) => histogram.cell(labels).observe(value));
    expect(await registry.metrics()).toBe(await plain().metrics());
    expect(await registry.getMetricsAsJSON()).toEqual(await plain().getMetricsAsJSON());
  });

  it("sums across gateway workers like prom-client's Histogram", async () => {
    const worker = new Registry();
    const histogram = new PendingHistogram({ ...config, registers: [worker] });
    for (const [labels, value] of observations) histogram.cell(labels).observe(value);
    const summed = AggregatorRegistry.aggregate([
      await worker.getMetricsAsJSON(),
      await worker.getMetricsAsJSON(),
    ]);
    const oracle = AggregatorRegistry.aggregate([
      await plain().getMetricsAsJSON(),
      await plain().getMetricsAsJSON(),
    ]);
    expect(await summed.metrics()).toBe(await oracle.metrics());
  });

  it("gives one cell per label set", () => {
    const histogram = new PendingHistogram({ ...config, registers: [] });
    expect(histogram.cell({ network: "a", method: "x" })).toBe(histogram.cell({ network: "a", method: "x" }));
    expect(histogram.cell({ network: "a", method: "x" })).not.toBe(
      histogram.cell({ network: "a", method: "y" }),
    );
  });
});
