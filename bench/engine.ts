/**
 * One evaluation round of the health engine for 10,000 light nodes across 10 networks (1,000 each, 3 reserved peers
 * each), many rounds with the state carried over, as the controller runs it. Prints median and p99 time per round
 * against the goal (< 20 ms), and the ratio to a baseline measured in the same run: the same round doing only the
 * reference head and one status object per node (the least any engine must do).
 *
 *   npx tsx bench/engine.ts [rounds]
 */
import { PerformanceObserver } from "node:perf_hooks";
import { networkSchema } from "../src/config/sections/network.js";
import { evaluateNetwork } from "../src/health/engine.js";
import { trackReference, type ReferenceHistory } from "../src/health/referenceTracker.js";
import type {
  EngineOutput,
  NetworkHealthState,
  NetworkParams,
  NodeObservation,
  NodeStatus,
  PeerObservation,
} from "../src/health/types.js";
import type { BlockRef } from "../src/chain/blockRef.js";

const NETWORKS = 10;
const NODES_PER_NETWORK = 1_000;
const PEERS = 3;
const ROUNDS = Number(process.argv[2] ?? 300);
const WARMUP = 50;
const PROBE_MS = 2_000;
const GOAL_MS = 20;
const T0 = 1_700_000_000_000;

const networks: NetworkParams[] = Array.from({ length: NETWORKS }, (_, i) => {
  const parsed = networkSchema.parse({
    name: `net-${i}`,
    chainId: 1000 + i,
    blockTime: `${[12, 12, 12, 5, 2, 12, 12, 5, 2, 12][i]}s`,
    reservedPeers: [{ name: "full-0", http: "http://127.0.0.1:1" }],
  });
  return {
    name: parsed.name,
    chainId: parsed.chainId,
    blockTimeMs: parsed.blockTimeMs,
    health: parsed.health,
  };
});

/** Deterministic pseudo-random numbers, so every run sees the same fleet. */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1_664_525 + 1_013_904_223) >>> 0;
    return s / 2 ** 32;
  };
}

function blockOf(net: number, n: number, blockSeconds: number): BlockRef {
  return { number: n, hash: `0x${net}-${n}`, timestamp: 1_600_000_000 + n * blockSeconds };
}

function headAt(network: NetworkParams, now: number): number {
  return 5_000_000 + Math.floor((now - T0) / network.blockTimeMs);
}

function peersAt(net: number, network: NetworkParams, now: number): PeerObservation[] {
  const head = headAt(network, now);
  const bs = network.blockTimeMs / 1000;
  const recent = new Map<number, string>();
  for (let h = head - 16; h < head; h++) recent.set(h, `0x${net}-${h}`);
  return Array.from({ length: PEERS }, (_, p) => ({
    name: `full-${p}`,
    reachable: true,
    chainId: network.chainId,
    head: blockOf(net, head, bs),
    headSeenAt: now - 500,
    recentHashes: recent,
  }));
}

/** Node names are stable strings, as the fleet's members are (not rebuilt every round). */
const nodeNames = Array.from({ length: NETWORKS }, (_, net) =>
  Array.from({ length: NODES_PER_NETWORK }, (_, i) => `net-${net}-node-${i}`),
);

/** A realistic pool: most nodes in sync or one block behind, a few lagging, syncing, stalled or not answering. */
function nodesAt(net: number, network: NetworkParams, now: number, round: number): NodeObservation[] {
  const head = headAt(network, now);
  const bs = network.blockTimeMs / 1000;
  const random = rng(net * 7919 + round);
  const check = head - network.health.settledDepth;
  const nodes: NodeObservation[] = new Array(NODES_PER_NETWORK);
  for (let i = 0; i < NODES_PER_NETWORK; i++) {
    const kind = i % 100; // stable per node: 1% dead, 2% lagging far, 1% syncing, 1% stalled
    const jitter = random() < 0.2 ? 1 : 0;
    const nodeHead = kind === 0 ? undefined : kind <= 2 ? head - 40 : kind === 4 ? 5_000_000 : head - jitter;
    nodes[i] = {
      name: nodeNames[net]![i]!,
      startedAt: T0 - 86_400_000,
      reachable: kind !== 0,
      error: kind === 0 ? "timeout after 1500 ms" : undefined,
      chainId: network.chainId,
      head: nodeHead === undefined ? undefined : blockOf(net, nodeHead, bs),
      syncing: kind === 3,
      check: { number: check, hash: `0x${net}-${check}` },
      restarts: kind === 0 ? [{ at: T0 - 600_000, reason: "unresponsive" }] : [],
      routed: kind > 4,
    };
  }
  return nodes;
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;
}

function baselineRound(
  now: number,
  inputs: Array<{ peers: PeerObservation[]; nodes: NodeObservation[] }>,
  history: ReferenceHistory[],
): number {
  let sink = 0;
  for (let n = 0; n < NETWORKS; n++) {
    const ref = trackReference(inputs[n]!.peers, networks[n]!, history[n]!, now);
    history[n] = ref;
    const refNumber = ref.reference?.number ?? 0;
    const statuses: NodeStatus[] = inputs[n]!.nodes.map((o) => ({
      name: o.name,
      state: "Healthy",
      routed: o.routed ?? false,
      head: o.head?.number,
      lagBlocks: o.head ? refNumber - o.head.number : undefined,
      message: "",
      since: now,
    }));
    sink += statuses.length;
  }
  return sink;
}

function engineRound(
  now: number,
  inputs: Array<{ peers: PeerObservation[]; nodes: NodeObservation[] }>,
  states: Array<NetworkHealthState | undefined>,
): number {
  let sink = 0;
  for (let n = 0; n < NETWORKS; n++) {
    const out: EngineOutput = evaluateNetwork({
      now,
      network: networks[n]!,
      ...inputs[n]!,
      previous: states[n],
    });
    states[n] = out.state;
    sink += out.decisions.length + out.nodes.length;
  }
  return sink;
}

/** Garbage-collection pauses, to tell how much of the tail is the collector (entries arrive asynchronously). */
const gcPauses: Array<{ start: number; end: number }> = [];
const gcObserver = new PerformanceObserver((list) => {
  for (const e of list.getEntries()) gcPauses.push({ start: e.startTime, end: e.startTime + e.duration });
});
gcObserver.observe({ entryTypes: ["gc"] });
const engineWindows: Array<{ start: number; end: number }> = [];

const engineTimes: number[] = [];
const baselineTimes: number[] = [];
const states: Array<NetworkHealthState | undefined> = new Array(NETWORKS).fill(undefined);
const history: ReferenceHistory[] = Array.from({ length: NETWORKS }, () => ({}));
let decisions = 0;
let sink = 0;
for (let round = 0; round < WARMUP + ROUNDS; round++) {
  const now = T0 + round * PROBE_MS;
  const inputs = networks.map((network, n) => ({
    peers: peersAt(n, network, now),
    nodes: nodesAt(n, network, now, round),
  }));
  // Alternate the order so neither side always runs on a warmer cache.
  const t0 = performance.now();
  sink += baselineRound(now, inputs, history);
  const t1 = performance.now();
  const before = sink;
  sink += engineRound(now, inputs, states);
  const t2 = performance.now();
  if (round >= WARMUP) {
    baselineTimes.push(t1 - t0);
    engineTimes.push(t2 - t1);
    engineWindows.push({ start: t1, end: t2 });
    decisions += sink - before - NETWORKS * NODES_PER_NETWORK;
  }
}

// Let the observer deliver its entries (queued while the loop ran), then subtract each round's overlap with GC pauses.
await new Promise((resolve) => setTimeout(resolve, 50));
gcObserver.disconnect();
const engineWithoutGc = engineWindows
  .map(({ start, end }) => {
    let paused = 0;
    for (const gc of gcPauses) paused += Math.max(0, Math.min(end, gc.end) - Math.max(start, gc.start));
    return end - start - paused;
  })
  .sort((a, b) => a - b);
engineTimes.sort((a, b) => a - b);
baselineTimes.sort((a, b) => a - b);
const engineMedian = percentile(engineTimes, 0.5);
const engineP99 = percentile(engineTimes, 0.99);
const baseMedian = percentile(baselineTimes, 0.5);
const nodes = NETWORKS * NODES_PER_NETWORK;
console.log(
  `health engine: ${nodes} nodes in ${NETWORKS} networks, ${ROUNDS} rounds (after ${WARMUP} warm-up)`,
);
console.log(`  engine round   median ${engineMedian.toFixed(2)} ms   p99 ${engineP99.toFixed(2)} ms`);
console.log(
  `  baseline round median ${baseMedian.toFixed(2)} ms   p99 ${percentile(baselineTimes, 0.99).toFixed(2)} ms` +
    "   (reference head + one status object per node)",
);
console.log(
  `  engine round without GC pauses: median ${percentile(engineWithoutGc, 0.5).toFixed(2)} ms` +
    `   p99 ${percentile(engineWithoutGc, 0.99).toFixed(2)} ms`,
);
console.log(`  ratio engine/baseline (median): ${(engineMedian / baseMedian).toFixed(2)}x`);
console.log(
  `  per node: ${((engineMedian * 1000) / nodes).toFixed(2)} us;  decisions per round: ${(decisions / ROUNDS).toFixed(1)}`,
);
console.log(
  `  goal: median < ${GOAL_MS} ms per round: ${engineMedian < GOAL_MS ? "met" : "NOT met"}` +
    ` (p99 ${engineP99 < GOAL_MS ? "also under" : "over"} the goal)`,
);
if (sink < 0) console.log(sink);
