import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Controller } from "../../src/controller/controller.js";
import type { Devnet } from "../../src/devnet/devnet.js";
import { ProcessFleet } from "../../src/fleet/process/processFleet.js";
import type { EngineOutput } from "../../src/health/types.js";
import { silentLogger, type Logger } from "../../src/log/logger.js";
import { createControllerMetrics } from "../../src/metrics/controllerMetrics.js";
import { createRegistry } from "../../src/metrics/registry.js";
import { afterAll, afterEach, expect } from "vitest";
import { testNetwork } from "../controller/testNetwork.js";
import { startTestDevnet } from "./devnet.js";
import { anvilsUnder, commandLine } from "./processTree.js";
import { waitFor } from "./waitFor.js";

/** A light node as `up` runs it on the devnet: an empty anvil from the shared genesis, mined only by the driver. */
export const ANVIL_LIGHT_NODE = [
  "{anvil}",
  "--port",
  "{port}",
  "--chain-id",
  "{chainId}",
  "--timestamp",
  "{genesisTimestamp}",
  "--no-mining",
];

/** Where the transactions of a pre-mined chain go. */
const CHAIN_FILLER = "0x000000000000000000000000000000000000c4a1";

export interface DevnetFleetOptions {
  lightNodes: number;
  fullNodes?: number;
  blockTimeMs: number;
  health?: Record<string, unknown>;
  logger?: Logger;
  /**
   * A chain of this many blocks, each with a transaction, mined before the light nodes start (on the full nodes
   * alone, fast), so a node replaying it mines them one by one and takes seconds (empty blocks replay in a few calls).
   * Before the controller's first round: a chain growing that fast under it would be an implausible jump.
   */
  chainBlocks?: number;
}

export interface DevnetFleet {
  devnet: Devnet;
  fleet: ProcessFleet;
  controller: Controller;
  registry: ReturnType<typeof createRegistry>;
  /** Every round's output, in order. */
  outputs: EngineOutput[];
  stateOf(node: string): string | undefined;
  routed(): string[];
  stop(): Promise<void>;
}

/**
 * What `up` composes, on ephemeral ports: a devnet (network "devnet", chain 31337) whose full nodes are the reserved
 * peers, a process fleet of light nodes attached to it, and the controller over both. The caller stops it.
 */
export async function startDevnetFleet(options: DevnetFleetOptions): Promise<DevnetFleet> {
  const logger = options.logger ?? silentLogger();
  const devnet = await startTestDevnet({
    networks: [{ name: "devnet", chainId: 31_337, fullNodes: options.fullNodes ?? 2 }],
    blockTimeMs: options.blockTimeMs,
  });
  for (let i = 0; i < (options.chainBlocks ?? 0); i++) {
    await devnet.sendTransaction("devnet", { to: CHAIN_FILLER, value: 1n });
    await devnet.mine("devnet");
  }
  const dataDir = mkdtempSync(join(tmpdir(), "lightfleet-devnet-fleet-"));
  const fleet = new ProcessFleet({
    networks: [
      {
        name: "devnet",
        chainId: 31_337,
        nodes: { command: ANVIL_LIGHT_NODE, replicas: options.lightNodes, basePort: 0, startTimeout: 20_000 },
      },
    ],
    dataDir,
    logger,
    placeholders: { genesisTimestamp: String(devnet.genesisTimestamp) },
    onStarted: (member) => devnet.attach(member),
    onStopping: (member) => {
      try {
        devnet.detach(member.name);
      } catch {
        // never attached
      }
    },
  });
  const registry = createRegistry({ defaultMetrics: false });
  const outputs: EngineOutput[] = [];
  let controller: Controller | undefined;
  const stop = async () => {
    await controller?.stop();
    await fleet.stop();
    await devnet.stop();
    rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    await fleet.start();
    const peers = devnet.nodes("devnet").filter((n) => n.role === "full");
    controller = new Controller({
      networks: [testNetwork("devnet", peers, options.health, { blockTime: `${options.blockTimeMs}ms` })],
      fleet,
      logger,
      metrics: createControllerMetrics(registry),
      onRound: (_network, output) => void outputs.push(output),
    });
    controller.start();
  } catch (error) {
    await stop();
    throw error;
  }
  const started = controller;
  return {
    devnet,
    fleet,
    controller: started,
    registry,
    outputs,
    stateOf: (node) => started.lastOutput("devnet")?.nodes.find((n) => n.name === node)?.state,
    routed: () => fleet.routedMembers("devnet").map((m) => m.name),
    stop,
  };
}

/**
 * For a test file whose tests each need a devnet fleet of three light nodes, all routed: returns `healthyFleet(health)`,
 * which starts one (HEALTH merged with the test's own) and waits until every node is routed and past genesis. Each fleet is stopped
 * after its test, and the file fails if an anvil outlives it.
 */
export function routedFleets(base: { blockTimeMs: number; health: Record<string, unknown> }) {
  let current: DevnetFleet | undefined;
  afterEach(async () => {
    await current?.stop();
    current = undefined;
  });
  afterAll(() => {
    expect(anvilsUnder(process.pid), "anvil processes left behind").toEqual([]);
  });
  return async (health: Record<string, unknown> = {}, chainBlocks?: number): Promise<DevnetFleet> => {
    current = await startDevnetFleet({
      lightNodes: 3,
      blockTimeMs: base.blockTimeMs,
      health: { ...base.health, ...health },
      ...(chainBlocks !== undefined ? { chainBlocks } : {}),
    });
    const fleet = current;
    // Past genesis too: nodes at block 0 with the peers are in sync and routed before the first block; a fault
    // applied there leaves a node at height 0, which the engine judges by its lag and stall like any other head (it
    // was in step at genesis), but the tests mean a node that was following the chain.
    await waitFor(
      () => {
        const nodes = fleet.controller.lastOutput("devnet")?.nodes ?? [];
        return fleet.routed().length === 3 && nodes.length === 3 && nodes.every((n) => (n.head ?? 0) >= 1);
      },
      { what: "all three light nodes routed and past genesis", timeoutMs: 20_000 },
    );
    return fleet;
  };
}

/** NODE's status in one engine round. */
export const statusIn = (output: EngineOutput, node: string) => output.nodes.find((n) => n.name === node);

/** The restarts the fleet made of NODE so far. */
export const restartsOf = (f: DevnetFleet, node: string) =>
  f.fleet.members("devnet").find((m) => m.name === node)?.restarts ?? [];

/** The pid of the anvil serving NODE (found by its port), for faults the devnet has no command for (SIGSTOP). */
export function anvilPidOf(f: DevnetFleet, node: string): number {
  const port = new URL(f.fleet.members("devnet").find((m) => m.name === node)!.httpUrl).port;
  const pid = anvilsUnder(process.pid).find((p) => commandLine(p).includes(` --port ${port} `));
  if (pid === undefined) throw new Error(`no anvil process serves ${node} (port ${port})`);
  return pid;
}
