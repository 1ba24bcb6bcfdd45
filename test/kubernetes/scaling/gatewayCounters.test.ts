import { describe, expect, it } from "vitest";
import { gatewayCountersProblem } from "../../../src/kubernetes/scaling/gatewayCounters.js";

describe("gatewayCountersProblem", () => {
  const eth = { network: "mainnet", namespace: "eth" };
  const staging = { network: "mainnet", namespace: "staging" };
  const sepolia = { network: "sepolia", namespace: "staging" };

  it("lets a network run in one namespace read the gateway's counters, wherever the gateway runs", () => {
    expect(gatewayCountersProblem(sepolia, [eth, sepolia], "lightfleet")).toBeUndefined();
  });

  it("keeps the counters of a network run in several namespaces for the gateway namespace's pool", () => {
    expect(gatewayCountersProblem(eth, [eth, staging], "eth")).toBeUndefined();
    expect(gatewayCountersProblem(staging, [eth, staging], "eth")).toBe(
      "network mainnet runs in namespaces eth, staging and the gateway's counters (namespace eth) name only the " +
        "network; give this pool a Prometheus source (spec.scaling.source) that selects its namespace ({namespace})",
    );
  });
});
