import { describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config/loadConfig.js";
import { workerConfig } from "../../src/gateway/cluster/workerConfig.js";

const config = (gateway: object) => parseConfig({ gateway }, "test", {});

describe("workerConfig", () => {
  it("defaults to one worker", () => {
    expect(config({}).gateway.workers).toBe(1);
  });

  it("gives each of N workers 1/N of the rate and of the burst", () => {
    const limit = workerConfig(config({ rateLimit: { requestsPerSecond: 50, burst: 100 } }), 4).gateway
      .rateLimit;
    expect(limit).toEqual({ requestsPerSecond: 12.5, burst: 25 });
  });

  it("divides the default burst (one second's worth) and never below one call", () => {
    expect(workerConfig(config({ rateLimit: { requestsPerSecond: 10 } }), 4).gateway.rateLimit).toEqual({
      requestsPerSecond: 2.5,
      burst: 2,
    });
    expect(workerConfig(config({ rateLimit: { requestsPerSecond: 1 } }), 3).gateway.rateLimit?.burst).toBe(1);
  });

  it("leaves the rest alone, and everything with one worker or no limit", () => {
    const limited = config({ rateLimit: { requestsPerSecond: 10 }, maxWsConnectionsPerAddress: 5 });
    expect(workerConfig(limited, 1)).toBe(limited);
    expect(workerConfig(limited, 2).gateway.maxWsConnectionsPerAddress).toBe(5);
    const open = config({});
    expect(workerConfig(open, 2)).toBe(open);
  });
});
