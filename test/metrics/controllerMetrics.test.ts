import { execFileSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { evaluateNetwork } from "../../src/health/engine.js";
import type { EngineOutput } from "../../src/health/types.js";
import { createControllerMetrics } from "../../src/metrics/controllerMetrics.js";
import { createRegistry } from "../../src/metrics/registry.js";
import { createProbeMetrics } from "../../src/metrics/probeMetrics.js";
import { createScalingMetrics } from "../../src/metrics/scalingMetrics.js";
import { POOL_KEY_LABELS } from "../../src/kubernetes/controller/poolKey.js";
import { findTool } from "../support/requireTool.js";
import { T0, networkParams, node, peer } from "../health/scenario.js";

function setup() {
  const registry = createRegistry({ defaultMetrics: false });
  return { registry, metrics: createControllerMetrics(registry) };
}

/** The exposition's sample lines for one metric name (no HELP/TYPE, no other metrics). */
async function samples(registry: ReturnType<typeof setup>["registry"], name: string): Promise<string[]> {
  const text = await registry.metrics();
  return text
    .split("\n")
    .filter((line) => line.startsWith(`${name}{`) || line.startsWith(`${name} `))
    .sort();
}

function round(nodes: Parameters<typeof evaluateNetwork>[0]["nodes"], now = T0, previous?: EngineOutput) {
  return evaluateNetwork({
    now,
    network: networkParams(),
    peers: [peer("full-0", 1000)],
    nodes,
    previous: previous?.state,
  });
}

describe("controller metrics", () => {
  it("exports node state, head, lag, reference and pool figures from an engine round", async () => {
    const { registry, metrics } = setup();
    const out = round([
      node("a", 1000),
      node("b", 990, { routed: false }),
      node("c", undefined, { routed: false }),
    ]);
    metrics.observeRound("mainnet", out, 0.004);

    const states = await samples(registry, "lightfleet_node_state");
    expect(states).toHaveLength(3 * 7);
    expect(states).toContain('lightfleet_node_state{network="mainnet",node="a",state="Healthy"} 1');
    expect(states).toContain('lightfleet_node_state{network="mainnet",node="a",state="Lagging"} 0');
    expect(states).toContain('lightfleet_node_state{network="mainnet",node="b",state="Starting"} 1');
    expect(states.filter((l) => l.endsWith(" 1"))).toHaveLength(3);

    // A node that never reported a head has no head or lag series at all (not 0).
    expect(await samples(registry, "lightfleet_node_head_block")).toEqual([
      'lightfleet_node_head_block{network="mainnet",node="a"} 1000',
      'lightfleet_node_head_block{network="mainnet",node="b"} 990',
    ]);
    expect(await samples(registry, "lightfleet_node_lag_blocks")).toEqual([
      'lightfleet_node_lag_blocks{network="mainnet",node="a"} 0',
      'lightfleet_node_lag_blocks{network="mainnet",node="b"} 10',
    ]);
    expect(await samples(registry, "lightfleet_node_lag_seconds")).toContain(
      'lightfleet_node_lag_seconds{network="mainnet",node="b"} 120',
    );
    expect(await samples(registry, "lightfleet_reference_head_block")).toEqual([
      'lightfleet_reference_head_block{network="mainnet"} 1000',
    ]);
    expect(await samples(registry, "lightfleet_pool_healthy_nodes")).toEqual([
      'lightfleet_pool_healthy_nodes{network="mainnet"} 1',
    ]);
    expect(await samples(registry, "lightfleet_pool_nodes")).toEqual([
      'lightfleet_pool_nodes{network="mainnet"} 3',
    ]);
    expect(await samples(registry, "lightfleet_engine_decisions_total")).toContain(
      'lightfleet_engine_decisions_total{network="mainnet",kind="transition"} 3',
    );
    expect(await samples(registry, "lightfleet_engine_round_duration_seconds_count")).toEqual([
      'lightfleet_engine_round_duration_seconds_count{network="mainnet"} 1',
    ]);
  });

  it("moves the state series with the node and counts decisions by kind", async () => {
    const { registry, metrics } = setup();
    let out = round([node("a", 1000)]);
    metrics.observeRound("mainnet", out);
    for (let i = 1; i <= 2; i++) {
      out = round([node("a", undefined, { reachable: false })], T0 + i * 2_000, out);
      metrics.observeRound("mainnet", out);
    }
    const states = await samples(registry, "lightfleet_node_state");
    expect(states).toContain('lightfleet_node_state{network="mainnet",node="a",state="Unresponsive"} 1');
    expect(states).toContain('lightfleet_node_state{network="mainnet",node="a",state="Healthy"} 0');
    const decisions = await samples(registry, "lightfleet_engine_decisions_total");
    expect(decisions).toContain('lightfleet_engine_decisions_total{network="mainnet",kind="transition"} 2');
    expect(decisions).toContain('lightfleet_engine_decisions_total{network="mainnet",kind="unroute"} 1');
    expect(decisions).toContain('lightfleet_engine_decisions_total{network="mainnet",kind="restart"} 0');
  });

  it("removes every series of a node that left the pool, and of a network forgotten", async () => {
    const { registry, metrics } = setup();
    const first = round([node("a", 1000), node("gone", 1000)]);
    metrics.observeRound("mainnet", first);
    metrics.observeRound("mainnet", round([node("a", 1000)], T0 + 2_000, first));
    const text = await registry.metrics();
    expect(text).not.toContain('node="gone"');
    expect(await samples(registry, "lightfleet_node_state")).toHaveLength(7);

    metrics.forgetNetwork("mainnet");
    expect(await registry.metrics()).not.toContain('network="mainnet"');
  });

  it("labels a cluster pool with its namespace, so one network in two namespaces is two sets of series", async () => {
    const registry = createRegistry({ defaultMetrics: false });
    const metrics = createControllerMetrics(registry, POOL_KEY_LABELS);
    const probes = createProbeMetrics(registry, POOL_KEY_LABELS);
    const scaling = createScalingMetrics(registry, POOL_KEY_LABELS);
    metrics.observeRound("eth/mainnet", round([node("a", 1000)]));
    metrics.observeRound("staging/mainnet", round([node("a", 990, { routed: false })]));
    probes.errors.inc({ network: "staging/mainnet", target: "peer", reason: "timeout" });
    scaling.observe("eth/mainnet", { rate: 12, desired: 2, floor: 1 });

    expect(await samples(registry, "lightfleet_node_head_block")).toEqual([
      'lightfleet_node_head_block{pool_namespace="eth",network="mainnet",node="a"} 1000',
      'lightfleet_node_head_block{pool_namespace="staging",network="mainnet",node="a"} 990',
    ]);
    expect(await samples(registry, "lightfleet_probe_errors_total")).toEqual([
      'lightfleet_probe_errors_total{pool_namespace="staging",network="mainnet",target="peer",reason="timeout"} 1',
    ]);
    expect(await samples(registry, "lightfleet_pool_request_rate")).toEqual([
      'lightfleet_pool_request_rate{pool_namespace="eth",network="mainnet"} 12',
    ]);

    // Forgetting one pool leaves the other namespace's series.
    metrics.forgetNetwork("staging/mainnet");
    expect(await samples(registry, "lightfleet_pool_healthy_nodes")).toEqual([
      'lightfleet_pool_healthy_nodes{pool_namespace="eth",network="mainnet"} 1',
    ]);
  });

  it("reports the systemic cause as 1 and the other causes as 0", async () => {
    const { registry, metrics } = setup();
    const out = evaluateNetwork({
      now: T0,
      network: networkParams(),
      peers: [peer("full-0", 1000, { reachable: false })],
      nodes: [node("a", 1000)],
    });
    metrics.observeRound("sepolia", out);
    expect(await samples(registry, "lightfleet_pool_systemic_failure")).toEqual([
      'lightfleet_pool_systemic_failure{network="sepolia",cause="no-peer-reachable"} 1',
      'lightfleet_pool_systemic_failure{network="sepolia",cause="peers-disagree"} 0',
      'lightfleet_pool_systemic_failure{network="sepolia",cause="peers-halted"} 0',
      'lightfleet_pool_systemic_failure{network="sepolia",cause="pool-mostly-bad"} 0',
    ]);
    expect(await samples(registry, "lightfleet_reference_head_block")).toEqual([]);
  });

  it("counts restarts carried out by reason, starting every reason at 0", async () => {
    const { registry, metrics } = setup();
    metrics.recordRestart("mainnet", "stall");
    metrics.recordRestart("mainnet", "stall");
    const restarts = await samples(registry, "lightfleet_node_restarts_total");
    expect(restarts).toContain('lightfleet_node_restarts_total{network="mainnet",reason="stall"} 2');
    expect(restarts).toContain('lightfleet_node_restarts_total{network="mainnet",reason="lag"} 0');
    expect(restarts).toHaveLength(5);
  });

  it("produces an exposition that promtool accepts", async () => {
    const tool = findTool("promtool", "prometheus");
    if (!tool.path) throw new Error(tool.missing);
    const { registry, metrics } = setup();
    metrics.observeRound("mainnet", round([node("a", 1000), node("b", 990)]), 0.002);
    metrics.recordRestart("mainnet", "lag");
    const text = await registry.metrics();
    // promtool check metrics exits non-zero on invalid exposition; lint warnings (e.g. counters) are printed only.
    const output = execFileSync(tool.path, ["check", "metrics"], { input: text, encoding: "utf8" });
    expect(output).not.toMatch(/error/i);
  });
});
