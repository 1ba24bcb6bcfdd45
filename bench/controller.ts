/**
 * The Kubernetes controller's per-round work for 5,000 pods across 10 pools, with the API server simulated on
 * 127.0.0.1: the pod cache filled by list + watch (KubernetesFleet), then each round reads the members and writes
 * LightNode and LightNodePool status (StatusWriter) as the controller does after the health engine. Rounds run on a
 * virtual 2 s clock; a few nodes per pool change state every round. Prints the time a round holds the controller
 * loop, the time until its status writes have settled, RSS, CPU (writes included) and status writes per simulated
 * minute, against a baseline measured in the same run: the same round reading members and building every status
 * object without writing anything.
 *
 *   npm run bench:controller [-- rounds]
 *
 * It runs compiled (tsc, then plain node), as the controller runs in its image: tsx compiling TypeScript inside the
 * process would add about 80 MiB of RSS that production does not have.
 */
import { spawn, spawnSync } from "node:child_process";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { getHeapStatistics } from "node:v8";
import { KubeConfig } from "@kubernetes/client-node";
import { KubernetesFleet } from "../src/kubernetes/pods/kubernetesFleet.js";
import type { PoolBinding } from "../src/kubernetes/pods/podRules.js";
import { lightNodeStatus } from "../src/kubernetes/status/statusObjects.js";
import { StatusWriter } from "../src/kubernetes/status/statusWriter.js";
import type { PoolRef } from "../src/kubernetes/status/statusWriter.js";
import type { EngineOutput, NodeState, NodeStatus } from "../src/health/types.js";
import { silentLogger } from "../src/log/logger.js";
import { parse } from "yaml";

const POOLS = 10;
const PODS_PER_POOL = 500;
const ROUNDS = Number(process.argv[2] ?? 150);
const VARIANT = process.argv[3];
const ROUND_MS = 2_000;
const CHANGES_PER_POOL_PER_ROUND = 2;
const T0 = Date.UTC(2026, 10, 22, 12);

function pod(pool: number, i: number) {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name: `light-${pool}-${i}`,
      namespace: "bench",
      uid: `uid-${pool}-${i}`,
      resourceVersion: "1",
      labels: { app: "light", network: `net-${pool}` },
    },
    spec: {
      containers: [{ name: "node", image: "light" }],
      readinessGates: [{ conditionType: "lightfleet.io/in-sync" }],
    },
    status: {
      phase: "Running",
      podIP: `10.${pool}.${i >> 8}.${i & 255}`,
      startTime: "2026-11-22T10:00:00Z",
      containerStatuses: [
        { name: "node", ready: true, restartCount: 0, image: "light", imageID: "", state: { running: {} } },
      ],
      conditions: [
        { type: "lightfleet.io/in-sync", status: "True", lastTransitionTime: "2026-11-22T10:01:00Z" },
      ],
    },
  };
}

/**
 * The simulated API server runs in a child process (this file again, with LIGHTFLEET_BENCH_API set), so the RSS and
 * CPU printed are the controller's alone. `GET /_counts` answers the status writes counted so far and the TCP
 * connections that carried API calls.
 */
if (process.env.LIGHTFLEET_BENCH_API) {
  let writes = 0;
  let connections = 0;
  const seen = new WeakSet<object>();
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://x");
    req.resume();
    if (url.pathname === "/_counts") {
      res.end(JSON.stringify({ writes, connections }));
      return;
    }
    if (!seen.has(req.socket)) {
      seen.add(req.socket);
      connections++;
    }
    if (req.method === "GET" && url.searchParams.get("watch") === "true") {
      res.writeHead(200, { "content-type": "application/json" }); // held open: no events
      return;
    }
    if (req.method === "GET" && url.pathname.endsWith("/pods")) {
      const pool = Number(/network=net-(\d+)/.exec(url.searchParams.get("labelSelector") ?? "")?.[1] ?? 0);
      const items = Array.from({ length: PODS_PER_POOL }, (_, i) => pod(pool, i));
      res.writeHead(200, { "content-type": "application/json" });
      res.end(
        JSON.stringify({ apiVersion: "v1", kind: "PodList", metadata: { resourceVersion: "10" }, items }),
      );
      return;
    }
    if (req.method === "PATCH" || req.method === "POST") {
      if (req.method === "PATCH") writes++;
      req.on("end", () => {
        res.writeHead(req.method === "POST" ? 201 : 200, { "content-type": "application/json" });
        res.end("{}");
      });
      return;
    }
    res.writeHead(404).end();
  });
  server.listen(0, "127.0.0.1", () => process.stdout.write(`${(server.address() as AddressInfo).port}\n`));
  // Ends with its parent.
  process.stdin.resume();
  process.stdin.on("end", () => process.exit(0));
} else if (VARIANT === "simulated") {
  await simulatedRun();
} else if (VARIANT === "real") {
  await realRun();
} else {
  // Both, each in a process of its own, with the V8 heap limit the chart gives the controller (controller.maxHeapMiB):
  // without it V8 sizes the heap from the machine's memory and the RSS printed is mostly garbage not yet collected.
  const chartValues = parse(readFileSync("charts/lightfleet/values.yaml", "utf8")) as {
    controller: { maxHeapMiB: number };
  };
  const heapFlag = `--max-old-space-size=${chartValues.controller.maxHeapMiB}`;
  console.log(`the controller as the chart runs it: NODE_OPTIONS=${heapFlag}`);
  for (const variant of ["simulated", "real"]) {
    console.log(
      `\n== ${variant === "real" ? "real kube-apiserver (etcd, schema validation, audit log)" : "simulated API server"}`,
    );
    const run = spawnSync(
      process.execPath,
      [...process.execArgv, heapFlag, fileURLToPath(import.meta.url), String(ROUNDS), variant],
      {
        stdio: "inherit",
      },
    );
    if (run.status !== 0) process.exitCode = 1;
  }
}

async function simulatedRun(): Promise<void> {
  const api = spawn(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url)], {
    env: { ...process.env, LIGHTFLEET_BENCH_API: "1" },
    stdio: ["pipe", "pipe", "inherit"],
  });
  const apiPort = await new Promise<number>((resolve, reject) => {
    api.once("error", reject);
    api.stdout.once("data", (chunk: Buffer) => resolve(Number(chunk.toString().trim())));
  });
  const apiUrl = `http://127.0.0.1:${apiPort}`;
  const serverCounts = async () =>
    (await (await fetch(`${apiUrl}/_counts`)).json()) as { writes: number; connections: number };
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromOptions({
    clusters: [
      {
        name: "bench",
        server: apiUrl,
        skipTLSVerify: true,
      },
    ],
    users: [{ name: "bench", token: "t" }],
    contexts: [{ name: "bench", cluster: "bench", user: "bench" }],
    currentContext: "bench",
  });
  await rounds(kubeConfig, async () => {
    const counts = await serverCounts();
    return { writes: counts.writes, connections: counts.connections };
  });
  api.stdin.end();
}

async function realRun(): Promise<void> {
  const { ensureControlPlane } = await import("../test/support/kube/controlPlaneBinaries.js");
  const { startControlPlane } = await import("../test/support/kube/controlPlane.js");
  const { prepareBenchCluster } = await import("./realClusterPods.js");
  const binaries = await ensureControlPlane((line) => console.log(line));
  const plane = await startControlPlane(binaries, {
    controllers: ["serviceaccount-controller", "namespace-controller"],
  });
  try {
    const started = performance.now();
    await prepareBenchCluster(plane.admin(), { pools: POOLS, podsPerPool: PODS_PER_POOL, pod });
    console.log(
      `setup: CRDs, namespace and ${POOLS * PODS_PER_POOL} running pods in ${((performance.now() - started) / 1000).toFixed(0)} s`,
    );
    // Counted by grep in a process of its own: parsing the audit log here would add its size to the RSS measured.
    const statusWrites = async () => {
      const counted = spawnSync(
        "grep",
        ["-c", '"verb":"patch".*"resource":"lightnode[a-z]*".*"subresource":"status"', plane.auditLogFile],
        {
          encoding: "utf8",
        },
      );
      return Number(counted.stdout.trim() || 0);
    };
    await rounds(plane.admin(), async () => ({ writes: await statusWrites() }));
  } finally {
    await plane.stop();
  }
}

/** The controller's rounds against the API server of KUBECONFIG; `counts` reads the status writes it has taken. */
async function rounds(
  kubeConfig: KubeConfig,
  counts: () => Promise<{ writes: number; connections?: number }>,
): Promise<void> {
  const serverCounts = counts;
  const bindings: PoolBinding[] = Array.from({ length: POOLS }, (_, p) => ({
    key: `net-${p}`,
    network: `net-${p}`,
    namespace: "bench",
    labelSelector: `app=light,network=net-${p}`,
    rpcPort: 8545,
    workload: { kind: "StatefulSet", name: `light-${p}` },
  }));
  const refs = new Map<string, PoolRef>(
    bindings.map((b) => [
      b.key,
      { key: b.key, network: b.network, namespace: "bench", name: b.network, generation: 1 },
    ]),
  );
  let now = T0;
  const rssAtStart = process.memoryUsage().rss / 2 ** 20;
  const fleet = new KubernetesFleet({
    kubeConfig,
    pools: bindings,
    logger: silentLogger(),
    clock: () => now,
  });
  fleet.start();
  const deadline = Date.now() + 120_000;
  while (bindings.some((b) => fleet.members(b.network).length < PODS_PER_POOL)) {
    if (Date.now() > deadline) throw new Error("pod cache not filled within 120 s");
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  const writer = new StatusWriter(kubeConfig, {
    pools: () => refs,
    fleet,
    logger: silentLogger(),
    clock: () => now,
  });

  const states = new Map<string, NodeState>();
  /** The engine's output for one pool this round: all Healthy but a few nodes that flip between Healthy and Lagging. */
  function outputOf(pool: number, round: number): EngineOutput {
    const nodes: NodeStatus[] = fleet.members(`net-${pool}`).map((m, i) => {
      const flips =
        i >= (round * CHANGES_PER_POOL_PER_ROUND) % PODS_PER_POOL &&
        i < ((round * CHANGES_PER_POOL_PER_ROUND) % PODS_PER_POOL) + CHANGES_PER_POOL_PER_ROUND;
      const previous = states.get(m.name) ?? "Healthy";
      const state: NodeState = flips ? (previous === "Healthy" ? "Lagging" : "Healthy") : previous;
      states.set(m.name, state);
      return {
        name: m.name,
        state,
        routed: state === "Healthy",
        head: 1000 + round,
        lagBlocks: 0,
        message: state,
        since: now,
      };
    });
    return {
      state: {},
      reference: {
        number: 1000 + round,
        hash: `0x${round.toString(16)}`,
        timestamp: 1_600_000_000 + round,
        seenAt: now,
        peers: ["full-0"],
      },
      nodes,
      decisions: [],
    };
  }

  /**
   * Runs the rounds. A round holds the controller loop until `round` returns (the controller does not wait for status
   * writes: runController leaves them in flight); what it returns settles once the round's writes have, and the next
   * round starts only then, as rounds 2 s apart do, so writes never pile up unmeasured.
   */
  async function measure(
    label: string,
    round: (r: number) => Promise<unknown> | undefined,
  ): Promise<{ held: number[]; settled: number[] }> {
    const held: number[] = [];
    const settled: number[] = [];
    const cpu0 = process.cpuUsage();
    for (let r = 0; r < ROUNDS; r++) {
      now += ROUND_MS;
      const start = performance.now();
      const writes = round(r);
      held.push(performance.now() - start);
      await writes;
      settled.push(performance.now() - start);
    }
    const cpu = process.cpuUsage(cpu0);
    const [median, p99] = stats(held);
    console.log(
      `${label.padEnd(34)} median ${median.toFixed(2)} ms  p99 ${p99.toFixed(2)} ms  ` +
        `CPU ${((cpu.user + cpu.system) / 1000 / ROUNDS).toFixed(2)} ms/round  RSS ${(process.memoryUsage().rss / 2 ** 20).toFixed(0)} MiB`,
    );
    return { held, settled };
  }

  function stats(times: number[]): [number, number] {
    const sorted = [...times].sort((a, b) => a - b);
    return [sorted[Math.floor(sorted.length / 2)] ?? 0, sorted[Math.floor(sorted.length * 0.99)] ?? 0];
  }

  const [baseline = 1] = stats(
    (
      await measure("baseline (members + status objects)", (r) => {
        for (let p = 0; p < POOLS; p++) {
          const output = outputOf(p, r);
          for (const node of output.nodes) lightNodeStatus(`net-${p}`, node, [], now);
        }
        return undefined;
      })
    ).held,
  );
  // First round creates every LightNode and writes every status: not part of the steady state.
  for (let p = 0; p < POOLS; p++) await writer.onRound(`net-${p}`, outputOf(p, 0));
  const before = await serverCounts();
  const startClock = now;
  const round = await measure("controller round (loop held)", (r) => {
    const written: Array<Promise<void>> = [];
    for (let p = 0; p < POOLS; p++) written.push(writer.onRound(`net-${p}`, outputOf(p, r)));
    return Promise.all(written);
  });
  const [median = 0, p99 = 0] = stats(round.held);
  const [settledMedian, settledP99] = stats(round.settled);
  console.log(
    `${"round's status writes settled".padEnd(34)} median ${settledMedian.toFixed(2)} ms  p99 ${settledP99.toFixed(2)} ms ` +
      `(from the round's start; the loop does not wait for them)`,
  );
  const minutes = (now - startClock) / 60_000;
  const after = await serverCounts();
  const writes = after.writes - before.writes;
  const rss = process.memoryUsage().rss / 2 ** 20;
  const stateChanges = POOLS * CHANGES_PER_POOL_PER_ROUND * (60_000 / ROUND_MS);
  console.log(
    `status writes per minute: ${(writes / minutes).toFixed(0)} (state changes per minute: ${stateChanges}, ` +
      `pods: ${POOLS * PODS_PER_POOL}; the 30 s refresh adds up to ${(2 * POOLS * PODS_PER_POOL).toFixed(0)})`,
  );
  if (after.connections !== undefined && before.connections !== undefined) {
    console.log(
      `API connections: ${after.connections - before.connections} opened during the rounds for ${writes} status writes ` +
        `(${after.connections} since the start, lists and watches included)`,
    );
  }
  console.log(
    `ratio to baseline: ${(median / baseline).toFixed(1)}x   goal: round < 50 ms (median ${median.toFixed(1)}, ` +
      `p99 ${p99.toFixed(1)}), RSS < 256 MiB (${rss.toFixed(0)}, peak ${(process.resourceUsage().maxRSS / 1024).toFixed(0)})`,
  );
  const memory = process.memoryUsage();
  const mib = (n: number) => (n / 2 ** 20).toFixed(0);
  console.log(
    `memory: RSS ${rssAtStart.toFixed(0)} MiB before the first list (runtime and modules); heap used ` +
      `${mib(memory.heapUsed)} MiB of ${mib(memory.heapTotal)} MiB (limit ${mib(getHeapStatistics().heap_size_limit)} MiB), ` +
      `external ${mib(memory.external)} MiB`,
  );
  fleet.stop();
}
