import { readFileSync, readdirSync } from "node:fs";
import { afterAll, onTestFinished } from "vitest";
import type { AnvilNode } from "../../src/devnet/anvil.js";
import { startAnvil } from "../../src/devnet/anvil.js";
import type { Devnet, StartDevnetOptions } from "../../src/devnet/devnet.js";
import { startDevnet } from "../../src/devnet/devnet.js";
import type { LightNodePool } from "../../src/kubernetes/api/crds.js";
import { freePort } from "../../src/process/freePort.js";
import { gethOrSkip } from "./geth/gethBinary.js";
import { waitFor } from "./waitFor.js";

export type TestDevnetOptions = Partial<StartDevnetOptions>;

const running = new Set<Devnet>();

// Catch-all for devnets started outside a test (in beforeAll): stopped when the file ends, also on failure.
afterAll(async () => {
  await Promise.allSettled([...running].map((devnet) => devnet.stop()));
  running.clear();
});

/**
 * Starts a devnet on ephemeral ports (one network "devnet", chain 31337, one full node, blocks only on mine() unless
 * told otherwise). Started inside a test it is stopped when that test finishes; started in beforeAll, when the file
 * finishes. Either way it is stopped on failure too.
 */
export async function startTestDevnet(options: TestDevnetOptions = {}): Promise<Devnet> {
  const devnet = await startDevnet({
    networks: [{ name: "devnet", chainId: 31_337 }],
    blockTimeMs: 0,
    ...options,
    basePort: 0,
  });
  running.add(devnet);
  const stop = async () => {
    running.delete(devnet);
    await devnet.stop();
  };
  try {
    onTestFinished(stop);
  } catch {
    // Not inside a test: the afterAll above stops it.
  }
  return devnet;
}

/** The node implementations a devnet runs: tests of behaviour that must hold on both run once on each. */
export const IMPLEMENTATIONS = ["anvil", "geth"] as const;
export type Implementation = (typeof IMPLEMENTATIONS)[number];

/**
 * startTestDevnet on `implementation`. On geth it needs the cached geth build (gethForTests: built if Go is there, an
 * error in CI without it); locally without Go it warns how to get geth and skips the test (gethOrSkip).
 */
export async function startTestDevnetOn(
  implementation: Implementation,
  skip: () => void,
  options: TestDevnetOptions = {},
): Promise<Devnet> {
  if (implementation === "anvil") return startTestDevnet(options);
  return startTestDevnet({ ...options, implementation: "geth", gethBinary: await gethOrSkip(skip) });
}

/**
 * A fresh anvil from the devnet's genesis (same timestamp, chain id 31337 unless told), as a fleet starts a light node
 * for the devnet to attach; stopped when the test finishes. Other options make nodes the devnet must refuse.
 */
export async function startGenesisAnvil(
  devnet: Devnet,
  name: string,
  options: { chainId?: number; timestamp?: number; port?: number } = {},
): Promise<AnvilNode> {
  const node = await startAnvil({
    name,
    chainId: options.chainId ?? 31_337,
    timestamp: options.timestamp ?? devnet.genesisTimestamp,
    port: options.port ?? 0,
    noMining: true,
  });
  onTestFinished(() => node.stop());
  return node;
}

/** Pids of the anvil processes the devnet runs now. */
export function devnetPids(devnet: Devnet): number[] {
  return devnet
    .status()
    .nodes.map((node) => node.pid)
    .filter((pid): pid is number => pid !== undefined);
}

/** Whether a process exists (and is not a zombie awaiting its parent). */
export function processAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
  } catch {
    return false;
  }
}

/** Anvil processes whose parent is this process (none may remain once every devnet is stopped). */
export function anvilChildren(parentPid = process.pid): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const comm = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (comm === "anvil" && Number(fields[1]) === parentPid && fields[0] !== "Z") pids.push(Number(entry));
    } catch {
      // the process ended while listing
    }
  }
  return pids;
}

/** Fails naming any anvil child of this process still running (call it once everything should be stopped). */
export async function expectNoAnvilLeft(timeoutMs = 10_000): Promise<void> {
  await waitFor(() => anvilChildren().length === 0, {
    timeoutMs,
    what: `anvil processes ${anvilChildren().join(", ")} to exit`,
  });
}

/** Waits until none of the given processes is alive; fails naming the survivors. */
export async function expectProcessesGone(pids: number[], timeoutMs = 10_000): Promise<void> {
  await waitFor(() => pids.every((pid) => !processAlive(pid)), {
    timeoutMs,
    what: `processes ${pids.filter(processAlive).join(", ")} to exit`,
  });
}

/**
 * Light anvils playing the pods of a pool: `light-0`, `light-1`, ... on one port at 127.0.0.2, .3, ... (as pod IPs
 * share a port), following the devnet's network "devnet" (its block driver mirrors every block onto them, faults
 * apply). Call it inside a test: they are stopped when the test finishes.
 */
export async function startPodNodes(
  devnet: Devnet,
  count: number,
): Promise<{ port: number; nodes: AnvilNode[] }> {
  const port = await freePort();
  const nodes: AnvilNode[] = [];
  for (let i = 0; i < count; i++) {
    const node = await startAnvil({
      name: `light-${i}`,
      chainId: 31_337,
      timestamp: devnet.genesisTimestamp,
      noMining: true,
      host: `127.0.0.${i + 2}`,
      port,
    });
    nodes.push(node);
    await devnet.attach({
      name: `light-${i}`,
      network: "devnet",
      httpUrl: node.httpUrl,
      kill: () => node.process.kill("SIGKILL"),
    });
  }
  onTestFinished(async () => {
    await Promise.allSettled(nodes.map((n) => n.stop()));
  });
  return { port, nodes };
}

/** When startPodNodes' pods started: one time for every copy of a pod, as the API server keeps it. */
const POD_START_TIME = new Date(Date.now() - 60_000).toISOString();

/** The Pod object of startPodNodes' node `light-i` (label app=light, the readiness gate, its 127.0.0.x address). */
export function podNodeObject(i: number) {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name: `light-${i}`,
      namespace: "eth",
      uid: `uid-${i}`,
      resourceVersion: "1",
      labels: { app: "light" },
    },
    spec: {
      containers: [{ name: "node", image: "anvil" }],
      readinessGates: [{ conditionType: "lightfleet.io/in-sync" }],
    },
    status: {
      podIP: `127.0.0.${i + 2}`,
      startTime: POD_START_TIME,
      conditions: [],
    },
  };
}

/** Health settings that let a pool's states move within a test's seconds. */
export const POOL_HEALTH = {
  probeInterval: "200ms",
  maxLagBlocks: 3,
  unhealthyAfter: 2,
  healthyAfter: 2,
  stallAfter: "1m",
  restartAfter: "1m",
  startupGrace: "1s",
  peerQuorum: 2,
};

/**
 * A LightNodePool for network `name` whose peer and pods go nowhere: for tests of which pools a controller takes up,
 * not of what it does with them.
 */
export function idlePool(name: string, namespace: string, labels?: Record<string, string>) {
  return {
    apiVersion: "lightfleet.io/v1alpha1",
    kind: "LightNodePool",
    metadata: { name, namespace, ...(labels ? { labels } : {}) },
    spec: {
      network: name,
      chainId: 1,
      workloadRef: { kind: "StatefulSet", name },
      selector: { matchLabels: { app: name } },
      reservedPeers: [{ http: "http://127.0.0.1:9" }],
    },
  };
}

/**
 * The LightNodePool of the devnet's network whose pods are `startPodNodes`' nodes on `port`, with the devnet's full
 * nodes as reserved peers.
 */
export function devnetPool(
  devnet: Devnet,
  port: number,
  overrides: { name?: string; generation?: number; spec?: Partial<LightNodePool["spec"]> } = {},
): LightNodePool {
  const full = devnet.nodes("devnet").filter((n) => n.role === "full");
  return {
    apiVersion: "lightfleet.io/v1alpha1",
    kind: "LightNodePool",
    metadata: { name: overrides.name ?? "devnet", namespace: "eth", generation: overrides.generation ?? 1 },
    spec: {
      network: "devnet",
      chainId: 31_337,
      workloadRef: { kind: "StatefulSet", name: "light" },
      selector: { matchLabels: { app: "light" } },
      rpcPort: port,
      reservedPeers: full.map((n) => ({ name: n.name, http: n.httpUrl, ws: n.wsUrl })),
      health: POOL_HEALTH,
      ...overrides.spec,
    },
  };
}
