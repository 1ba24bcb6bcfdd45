import { Counter, Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { ExpositionError, parseExposition } from "../../../src/scaling/sources/parseExposition.js";
import { sumRequestsByNetwork } from "../../../src/scaling/sources/gatewayScrapeSource.js";

describe("parseExposition", () => {
  it("reads what prom-client writes, escaped label values included", async () => {
    const registry = new Registry();
    const counter = new Counter({
      name: "lightfleet_gateway_requests_total",
      help: 'Requests with "quotes" and a \\ backslash',
      labelNames: ["network", "method", "outcome"],
      registers: [registry],
    });
    counter.inc({ network: "mainnet", method: "eth_call", outcome: "ok" }, 7);
    counter.inc({ network: "mainnet", method: 'we"ird\\meth,od} 1\nx', outcome: "error" }, 2);
    counter.inc({ network: "sepolia", method: "eth_blockNumber", outcome: "ok" }, 1.5);
    const samples = parseExposition(await registry.metrics());
    expect(samples).toContainEqual({
      name: "lightfleet_gateway_requests_total",
      labels: { network: "mainnet", method: 'we"ird\\meth,od} 1\nx', outcome: "error" },
      value: 2,
    });
    const upstream = new Counter({
      name: "lightfleet_gateway_upstream_requests_total",
      help: "calls sent to nodes",
      labelNames: ["network", "upstream", "outcome"],
      registers: [registry],
    });
    upstream.inc({ network: "mainnet", upstream: "a", outcome: "ok" }, 7);
    upstream.inc({ network: "mainnet", upstream: "b", outcome: "timeout" }, 2);
    upstream.inc({ network: "sepolia", upstream: "a", outcome: "ok" }, 1.5);
    expect(sumRequestsByNetwork(await registry.metrics())).toEqual(
      new Map([
        ["mainnet", 9],
        ["sepolia", 1.5],
      ]),
    );
  });

  it("accepts timestamps, special values, spaces and CRLF line ends", () => {
    const text =
      '# HELP x help\r\n# TYPE x counter\r\nx 1 1700000000000\r\ny{a="b" , c = "d",} +Inf\nz NaN\nw -1.5e3\n# EOF\n';
    expect(parseExposition(text)).toEqual([
      { name: "x", labels: {}, value: 1 },
      { name: "y", labels: { a: "b", c: "d" }, value: Number.POSITIVE_INFINITY },
      { name: "z", labels: {}, value: Number.NaN },
      { name: "w", labels: {}, value: -1500 },
    ]);
  });

  it.each([
    ['{a="b"} 1', /line 1: expected a metric name/],
    ['x{a="b} 1', /unterminated value of label a/],
    ['x{a="\\q"} 1', /invalid escape/],
    ["x{a=b} 1", /expected a quoted value for label a/],
    ['x{a="1",a="2"} 1', /label a repeated/],
    ["x one", /invalid value "one" of x/],
    ["x", /expected a value after x/],
    ["x 1 2 3", /expected a value after x/],
    ["ok 1\nx 1 soon", /line 2: invalid timestamp of x/],
  ])("refuses %j with a clear error", (text, message) => {
    expect(() => parseExposition(text)).toThrow(ExpositionError);
    expect(() => parseExposition(text)).toThrow(message);
  });
});
