import { describe, expect, it } from "vitest";
import { ConfigError } from "../../src/config/errors.js";
import { parseConfig } from "../../src/config/loadConfig.js";

const peer = { name: "full-0", http: "http://127.0.0.1:8545" };

function problemsOf(scaling: Record<string, unknown>): string[] {
  try {
    parseConfig(
      { networks: [{ name: "mainnet", preset: "mainnet", reservedPeers: [peer], scaling }] },
      "t",
      {},
    );
  } catch (error) {
    if (error instanceof ConfigError) return error.problems.map((p) => `${p.path}: ${p.message}`);
    throw error;
  }
  return [];
}

describe("scaling config", () => {
  it("defaults to the HPA's habits and the gateway's counters", () => {
    const config = parseConfig(
      { networks: [{ name: "mainnet", preset: "mainnet", reservedPeers: [peer] }] },
      "t",
      {},
    );
    expect(config.networks[0]!.scaling).toEqual({
      enabled: true,
      minReplicas: 1,
      maxReplicas: 10,
      targetRequestsPerNode: 50,
      tolerance: 0.1,
      scaleDownStabilization: 300_000,
      scaleUpStep: 4,
      rateWindow: 60_000,
      source: { type: "gateway" },
      cronFloors: [],
    });
  });

  it("fills in the Prometheus source's query and timeout", () => {
    const config = parseConfig(
      {
        networks: [
          {
            name: "mainnet",
            preset: "mainnet",
            reservedPeers: [peer],
            scaling: { source: { type: "prometheus", url: "http://prom:9090" } },
          },
        ],
      },
      "t",
      {},
    );
    expect(config.networks[0]!.scaling.source).toEqual({
      type: "prometheus",
      url: "http://prom:9090",
      query: 'sum(rate(lightfleet_gateway_upstream_requests_total{network="{network}"}[1m]))',
      timeout: 5_000,
    });
  });

  it("names every bad option by its path", () => {
    const problems = problemsOf({
      targetRequestsPerNode: 0,
      tolerance: 1,
      scaleDownStabilization: "soon",
      source: { type: "graphite" },
      cronFloors: [
        { start: "0 8 * *", end: "61 20 * * *", timezone: "Mars/Olympus", minReplicas: 3 },
        { start: "0 8 * * *", end: "0 9 * * *", minReplicas: 11 },
      ],
    });
    const text = problems.join("\n");
    expect(text).toContain("networks[0].scaling.targetRequestsPerNode");
    expect(text).toContain("networks[0].scaling.tolerance");
    expect(text).toMatch(/networks\[0\]\.scaling\.scaleDownStabilization: must be a duration/);
    expect(text).toContain("networks[0].scaling.source.type");
    expect(text).toMatch(/networks\[0\]\.scaling\.cronFloors\[0\]\.start: must be a cron expression/);
    expect(text).toMatch(/networks\[0\]\.scaling\.cronFloors\[0\]\.end: must be a cron expression/);
    expect(text).toMatch(/networks\[0\]\.scaling\.cronFloors\[0\]\.timezone: must be an IANA time zone/);
  });

  it("refuses a cron floor above maxReplicas", () => {
    expect(problemsOf({ cronFloors: [{ start: "0 8 * * *", end: "0 9 * * *", minReplicas: 11 }] })).toEqual([
      "networks[0].scaling.cronFloors[0].minReplicas: must not exceed maxReplicas (10)",
    ]);
  });
});
