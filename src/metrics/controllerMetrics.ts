import { Counter, Gauge, Histogram } from "prom-client";
import type { Registry } from "prom-client";
import {
  DECISION_KINDS,
  NODE_STATES,
  RESTART_REASONS,
  SYSTEMIC_CAUSES,
  type EngineOutput,
  type NodeState,
  type RestartReason,
} from "../health/types.js";
import { NETWORK_LABELS, type PoolLabels } from "./poolLabels.js";

export interface ControllerMetrics {
  nodeState: Gauge;
  nodeHead: Gauge;
  nodeLagBlocks: Gauge;
  nodeLagSeconds: Gauge;
  referenceHead: Gauge;
  restarts: Counter;
  poolHealthy: Gauge;
  poolNodes: Gauge;
  poolSystemic: Gauge;
  decisions: Counter;
  roundDuration: Histogram;
  /**
   * Brings the node, reference, pool and decision metrics up to date with one engine round of `network`, and drops
   * every series of nodes that are no longer in the pool, so label cardinality follows the fleet.
   */
  observeRound(network: string, output: EngineOutput, durationSeconds?: number): void;
  /** Counts a restart the fleet carried out (a deferred restart decision is not a restart). */
  recordRestart(network: string, reason: RestartReason): void;
  /**
   * Drops what a follower must not show: the network's node, reference and pool gauges (only the leader's view is
   * current). Counters and the round histogram keep their totals, so a later term does not read as a reset.
   */
  dropView(network: string): void;
  /** Drops every series of a network that is no longer configured. */
  forgetNetwork(network: string): void;
}

/**
 * The controller's metrics (names are DESIGN.md's contract for dashboards and alerts). Label values are bounded:
 * configured network names, fleet member names, and fixed enumerations (states, reasons, causes, decision kinds).
 * `pools` turns the controller's pool name into labels: `{network}` on one host, `{pool_namespace, network}` in a
 * cluster.
 */
export function createControllerMetrics(
  registry: Registry,
  pools: PoolLabels = NETWORK_LABELS,
): ControllerMetrics {
  const registers = [registry];
  const pool = pools.names;
  const nodeState = new Gauge({
    name: "lightfleet_node_state",
    help: "1 for the light node's current health state, 0 for the other states",
    labelNames: [...pool, "node", "state"],
    registers,
  });
  const nodeHead = new Gauge({
    name: "lightfleet_node_head_block",
    help: "Head block number the light node reported last (absent until it reports one)",
    labelNames: [...pool, "node"],
    registers,
  });
  const nodeLagBlocks = new Gauge({
    name: "lightfleet_node_lag_blocks",
    help: "Blocks the light node is behind the reference head (absent while unknown)",
    labelNames: [...pool, "node"],
    registers,
  });
  const nodeLagSeconds = new Gauge({
    name: "lightfleet_node_lag_seconds",
    help: "Reference head timestamp minus the light node's head timestamp (absent while unknown)",
    labelNames: [...pool, "node"],
    registers,
  });
  const referenceHead = new Gauge({
    name: "lightfleet_reference_head_block",
    help: "Reference head block number, agreed by the reserved full-node peers",
    labelNames: [...pool],
    registers,
  });
  const restarts = new Counter({
    name: "lightfleet_node_restarts_total",
    help: "Light-node restarts carried out, by reason",
    labelNames: [...pool, "reason"],
    registers,
  });
  const poolHealthy = new Gauge({
    name: "lightfleet_pool_healthy_nodes",
    help: "Light nodes in the Healthy state",
    labelNames: [...pool],
    registers,
  });
  const poolNodes = new Gauge({
    name: "lightfleet_pool_nodes",
    help: "Light nodes in the pool",
    labelNames: [...pool],
    registers,
  });
  const poolSystemic = new Gauge({
    name: "lightfleet_pool_systemic_failure",
    help: "1 while the pool is in a systemic failure of this cause (no restarts, routing kept), else 0",
    labelNames: [...pool, "cause"],
    registers,
  });
  const decisions = new Counter({
    name: "lightfleet_engine_decisions_total",
    help: "Decisions of the health engine, by kind",
    labelNames: [...pool, "kind"],
    registers,
  });
  const roundDuration = new Histogram({
    name: "lightfleet_engine_round_duration_seconds",
    help: "Time of one health engine evaluation round of a pool",
    labelNames: [...pool],
    buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1],
    registers,
  });

  /** Per network, each node's state as last exported: series are set on change and removed when the node goes. */
  const exported = new Map<string, Map<string, NodeState>>();

  function startNetwork(network: string): Map<string, NodeState> {
    let nodes = exported.get(network);
    if (nodes) return nodes;
    nodes = new Map();
    exported.set(network, nodes);
    const pool = pools.of(network);
    // Counters start at 0 so that increase() sees the first event.
    for (const reason of RESTART_REASONS) restarts.inc({ ...pool, reason }, 0);
    for (const kind of DECISION_KINDS) decisions.inc({ ...pool, kind }, 0);
    return nodes;
  }

  function removeNode(network: string, node: string): void {
    const pool = pools.of(network);
    for (const state of NODE_STATES) nodeState.remove({ ...pool, node, state });
    nodeHead.remove({ ...pool, node });
    nodeLagBlocks.remove({ ...pool, node });
    nodeLagSeconds.remove({ ...pool, node });
  }

  function setOrRemove(gauge: Gauge, labels: Record<string, string>, value?: number) {
    if (value === undefined) gauge.remove(labels);
    else gauge.set(labels, value);
  }

  const dropView = (network: string) => {
    const nodes = exported.get(network);
    if (!nodes) return;
    for (const node of nodes.keys()) removeNode(network, node);
    exported.delete(network);
    const pool = pools.of(network);
    referenceHead.remove(pool);
    poolHealthy.remove(pool);
    poolNodes.remove(pool);
    for (const cause of SYSTEMIC_CAUSES) poolSystemic.remove({ ...pool, cause });
  };

  return {
    nodeState,
    nodeHead,
    nodeLagBlocks,
    nodeLagSeconds,
    referenceHead,
    restarts,
    poolHealthy,
    poolNodes,
    poolSystemic,
    decisions,
    roundDuration,

    observeRound(network, output, durationSeconds) {
      const previous = startNetwork(network);
      const pool = pools.of(network);
      const current = new Map<string, NodeState>();
      let healthy = 0;
      for (const status of output.nodes) {
        const labels = { ...pool, node: status.name };
        current.set(status.name, status.state);
        if (status.state === "Healthy") healthy++;
        const before = previous.get(status.name);
        if (before !== status.state) {
          for (const state of NODE_STATES)
            nodeState.set({ ...labels, state }, state === status.state ? 1 : 0);
        }
        setOrRemove(nodeHead, labels, status.head);
        setOrRemove(nodeLagBlocks, labels, status.lagBlocks);
        setOrRemove(nodeLagSeconds, labels, status.lagSeconds);
      }
      for (const node of previous.keys()) if (!current.has(node)) removeNode(network, node);
      exported.set(network, current);

      if (output.reference) referenceHead.set(pool, output.reference.number);
      else referenceHead.remove(pool);
      poolHealthy.set(pool, healthy);
      poolNodes.set(pool, output.nodes.length);
      for (const cause of SYSTEMIC_CAUSES) {
        poolSystemic.set({ ...pool, cause }, output.systemic?.cause === cause ? 1 : 0);
      }
      for (const decision of output.decisions) decisions.inc({ ...pool, kind: decision.kind });
      if (durationSeconds !== undefined) roundDuration.observe(pool, durationSeconds);
    },

    recordRestart(network, reason) {
      startNetwork(network);
      restarts.inc({ ...pools.of(network), reason });
    },

    dropView,

    forgetNetwork(network) {
      if (!exported.has(network)) return;
      dropView(network);
      const pool = pools.of(network);
      for (const reason of RESTART_REASONS) restarts.remove({ ...pool, reason });
      for (const kind of DECISION_KINDS) decisions.remove({ ...pool, kind });
      roundDuration.remove(pool);
    },
  };
}
