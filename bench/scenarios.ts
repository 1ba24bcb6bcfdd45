/**
 * The health decisions scored over fault scenarios on the real single-host system (`lightfleet up`'s devnet, process
 * fleet, controller and gateway on ephemeral ports): for each scenario, restarts made against restarts warranted,
 * restarts missed and unwarranted, how long a bad node stayed routed after it turned bad (goal: one block interval plus
 * one probe interval), and blocks served (newHeads and `latest`) that the full nodes do not have by hash.
 *
 *   npx tsx bench/scenarios.ts [--implementation anvil|geth] [scenario ...]
 *
 * (default: every scenario, see SCENARIOS for the names; on anvil). With `--implementation geth` the devnet and the
 * light nodes are geth (the build of `npm run geth`, made now if missing), kept on one chain through the engine API.
 *
 * Each scenario starts from a pool of three routed, caught-up light nodes and two full nodes, ends with everything
 * healed and routed again, and is bounded in time. Not a test: it prints what it measured. BENCH_TIMELINE=1 adds a
 * timeline of heads and routing on stderr (see TIMELINE), BENCH_LOG_LEVEL the controller's and devnet's logs.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import WebSocket from "ws";
import { Controller } from "../src/controller/controller.js";
import type { Fault } from "../src/devnet/faults.js";
import { createControllerMetrics } from "../src/metrics/controllerMetrics.js";
import { createRegistry } from "../src/metrics/registry.js";
import { HttpRpcClient } from "../src/rpc/httpRpcClient.js";
import { startAnvil } from "../src/devnet/anvil.js";
import { withDevnetPeers } from "../src/up/devnetPeers.js";
import { startUp } from "../src/up/runUp.js";
import { GETH_MEMBER_COMMAND } from "../src/devnet/geth/gethProcess.js";
import { ensureGeth } from "../test/support/geth/gethBinary.js";
import { type RoutingChange, goodNodesUnrouted, stayedRoutedMs } from "./scenarioScore.js";

const args = process.argv.slice(2);
const flagAt = args.indexOf("--implementation");
const implementation = flagAt === -1 ? "anvil" : args[flagAt + 1];
if (implementation !== "anvil" && implementation !== "geth")
  throw new Error(`--implementation must be anvil or geth (got ${implementation})`);
if (flagAt !== -1) args.splice(flagAt, 2);
const gethBinary =
  implementation === "geth" ? await ensureGeth((line) => process.stderr.write(`${line}\n`)) : "";
const memberCommand =
  implementation === "geth"
    ? GETH_MEMBER_COMMAND
    : [
        "{anvil}",
        "--port",
        "{port}",
        "--chain-id",
        "{chainId}",
        "--timestamp",
        "{genesisTimestamp}",
        "--no-mining",
      ];

const NETWORK = "bench";
const BLOCK_MS = 1_000;
const PROBE_MS = 250;
const MAX_LAG = 3;
const GOAL_MS = BLOCK_MS + PROBE_MS;
const LIGHT = [0, 1, 2].map((i) => `${NETWORK}-light-${i}`);
const FULL = [0, 1].map((i) => `${NETWORK}-full-${i}`);

const dir = mkdtempSync(join(tmpdir(), "lightfleet-bench-scenarios-"));
const config = join(dir, "bench.yaml");
writeFileSync(
  config,
  `
log: { level: ${process.env.BENCH_LOG_LEVEL ?? "error"}, format: json }
admin: { host: 127.0.0.1, port: 0 }
gateway: { host: 127.0.0.1, port: 0, headPollInterval: 250ms }
keys: { host: 127.0.0.1, port: 0 }
dataDir: ${JSON.stringify(join(dir, "data"))}
devnet:
  blockTime: ${BLOCK_MS}ms
  implementation: ${implementation}
${implementation === "geth" ? `  gethBinary: ${JSON.stringify(gethBinary)}\n` : ""}  networks: [{ name: ${NETWORK}, chainId: 31337, fullNodes: 2 }]
networks:
  - name: ${NETWORK}
    chainId: 31337
    blockTime: ${BLOCK_MS}ms
    health:
      probeInterval: ${PROBE_MS}ms
      maxLagBlocks: ${MAX_LAG}
      restartLagBlocks: 12
      stallAfter: 8s
      restartAfter: 4s
      restartBackoffBase: 8s
      startupGrace: 30s
      failStaticMaxHold: 20s
    nodes:
      command: ${JSON.stringify(memberCommand)}
      replicas: 3
`,
);

const up = await startUp({ config, logFormat: "json", stdout: process.stderr });
const { devnet: startedDevnet, fleet: startedFleet, controller: startedController } = up.context;
if (!startedDevnet || !startedFleet || !startedController)
  throw new Error("the bench config needs a devnet, a fleet and a controller");
const devnet = startedDevnet;
const fleet = startedFleet;
let controller: Controller = startedController;
const rpc = up.endpoints.find((e) => e.label === `${NETWORK} RPC`)!.url;
const wsUrl = up.endpoints.find((e) => e.label === `${NETWORK} WebSocket`)!.url;

async function until<T>(
  check: () => T | undefined | false | Promise<T | undefined | false>,
  what: string,
  timeoutMs = 60_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
const pause = (ms: number) => until(() => false, "", ms).catch(() => undefined);

/** Every routing change as the fleet makes it (ms since the epoch). */
const routingChanges: RoutingChange[] = [];
const lastRouted = new Map<string, boolean>();
fleet.onChange(() => {
  for (const m of fleet.members(NETWORK)) {
    if (lastRouted.get(m.name) !== m.routed) {
      routingChanges.push({ node: m.name, at: Date.now(), routed: m.routed });
      trace(`${m.name} routed -> ${m.routed}`);
    }
    lastRouted.set(m.name, m.routed);
  }
});

/**
 * BENCH_TIMELINE=1: a timeline on stderr (ms since the bench began) of each scenario, fault and routing change, and of
 * every change in the heads: the chain's, the controller's reference, and for each node the devnet's view and the
 * controller's (its probed head, state, this round's condition, routed or not). It shows where the time went.
 */
const TIMELINE = process.env.BENCH_TIMELINE === "1";
const benchStart = Date.now();
function trace(line: string): void {
  if (TIMELINE) process.stderr.write(`[${Date.now() - benchStart}] ${line}\n`);
}
let lastHeads = "";
const headTracer = setInterval(() => {
  if (!TIMELINE) return;
  const output = controller.lastOutput(NETWORK);
  const nodes = devnet.status().nodes.map((n) => {
    const seen = output?.nodes.find((o) => o.name === n.name);
    const judged = seen
      ? ` [${seen.head ?? "-"} ${seen.state}${seen.reason ? `/${seen.reason}` : ""}${seen.routed ? "" : " out"}]`
      : "";
    return `${n.name} ${n.head?.number ?? "-"}${judged}`;
  });
  const heads = `chain ${devnet.head(NETWORK).number} reference ${output?.reference?.number ?? "-"}: ${nodes.join(", ")}`;
  if (heads !== lastHeads) trace(heads);
  lastHeads = heads;
}, 20);

/** What clients were served: every newHeads announcement and every `latest` answer. */
const served: Array<{ number: number; hash: string }> = [];
const ws = new WebSocket(wsUrl);
await new Promise((resolve, reject) => ws.once("open", resolve).once("error", reject));
ws.on("message", (data: Buffer) => {
  const m = JSON.parse(String(data)) as { params?: { result: { number: string; hash: string } } };
  if (m.params) served.push({ number: Number(m.params.result.number), hash: m.params.result.hash });
});
ws.send(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_subscribe", params: ["newHeads"] }));
let polling = true;
const client = new HttpRpcClient(rpc, 5_000);
const poller = (async () => {
  while (polling) {
    const block = await client
      .call<{ number: string; hash: string } | null>("eth_getBlockByNumber", ["latest", false])
      .catch(() => null);
    if (block) served.push({ number: Number(block.number), hash: block.hash });
    await pause(50);
  }
})();

/** The controller's reference head, sampled: how far it fell below its highest value within a scenario. */
let referenceHigh = 0;
let referenceFall = 0;
const referenceSampler = setInterval(() => {
  const reference = controller.lastOutput(NETWORK)?.reference?.number;
  if (reference === undefined) return;
  referenceHigh = Math.max(referenceHigh, reference);
  referenceFall = Math.max(referenceFall, referenceHigh - reference);
}, 20);

/** Two busy loops for a bounded time: a machine loaded by other work. */
function cpuLoad(): () => void {
  const children = [0, 1].map(() => spawn("yes", [], { stdio: "ignore" }));
  const stop = () => {
    for (const child of children) child.kill("SIGKILL");
  };
  const bound = setTimeout(stop, 120_000);
  return () => {
    clearTimeout(bound);
    stop();
  };
}
let stopLoad: (() => void) | undefined;

const fault = (node: string, f: Fault) => devnet.fault(node, f);
const routed = () =>
  fleet
    .members(NETWORK)
    .filter((m) => m.routed)
    .map((m) => m.name);
const restartCount = () => new Map(fleet.members(NETWORK).map((m) => [m.name, m.restarts.length]));

/** The process of a light node (anvil or geth, by its port), to stop it without killing it (a hung node). */
function nodePid(node: string): number | undefined {
  const port = new URL(fleet.members(NETWORK).find((m) => m.name === node)!.httpUrl).port;
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const argv = readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0");
      const flag = implementation === "geth" ? "--http.port" : "--port";
      if (
        /(^|\/)(anvil|geth)$/.test(argv[0] ?? "") &&
        argv.includes(flag) &&
        argv[argv.indexOf(flag) + 1] === port
      )
        return Number(entry);
    } catch {
      // gone meanwhile
    }
  }
  return undefined;
}
const hung = new Set<number>();
const signal = (pid: number | undefined, sig: NodeJS.Signals) => {
  if (pid === undefined) return;
  try {
    process.kill(pid, sig);
  } catch {
    // already gone
  }
};

/** Replaces the running controller by a new one (a controller restart), with the given reserved peers. */
async function restartController(
  extraPeers: Array<{ name: string; http: string; ws?: string }> = [],
): Promise<void> {
  await controller.stop();
  controller = new Controller({
    networks: withDevnetPeers(up.context.config.networks, devnet).map((n) => ({
      ...n,
      reservedPeers: [...n.reservedPeers, ...extraPeers],
    })),
    fleet,
    logger: up.context.logger,
    metrics: createControllerMetrics(createRegistry({ defaultMetrics: false })),
  });
  controller.start();
}

interface Scenario {
  name: string;
  /** Light nodes that turn bad, and restarts they warrant. */
  bad: string[];
  warranted: number;
  /** Breaks things; resolves with when each bad node turned bad (for the routed-time figure). */
  inject(): Promise<Map<string, number>>;
  /** How long to watch after the injection before healing. */
  watchMs: number;
  heal(): Promise<void>;
  /** Light nodes `heal` brings back (held, not killed): they may catch up after it (see goodNodesUnrouted). */
  healed?: string[];
}

/**
 * Nodes held back: each is bad once the chain is more than MAX_LAG past the height it is held at. That height is the
 * node's own head once the fault has landed, not its head before: a block on its way to the node when the fault is
 * asked for still reaches it first (the driver hands the block, then applies the fault), and a crossing counted from
 * the head before would be stamped a block early.
 */
async function holdBack(nodes: string[], f: Fault): Promise<Array<[string, number]>> {
  const before = nodes.map((node) => devnet.status().nodes.find((n) => n.name === node)?.head?.number);
  for (const node of nodes) await fault(node, f);
  const held = await Promise.all(nodes.map((node) => ownHead(node)));
  trace(
    `held at ${nodes.map((node, i) => `${node} ${held[i]} (devnet's view before the fault ${before[i]})`).join(", ")}; chain ${devnet.head(NETWORK).number}`,
  );
  return Promise.all(
    nodes.map(async (node, i): Promise<[string, number]> => {
      const crossed = await until(
        () => devnet.head(NETWORK).number > held[i]! + MAX_LAG && Date.now(),
        `${node} crossing`,
      );
      trace(`${node} crossed the threshold (chain ${devnet.head(NETWORK).number})`);
      return [node, crossed];
    }),
  );
}
/** A light node's head as it answers it. */
async function ownHead(node: string): Promise<number> {
  const url = fleet.members(NETWORK).find((m) => m.name === node)!.httpUrl;
  return Number(await new HttpRpcClient(url, 5_000).call<string>("eth_blockNumber"));
}
async function now(node: string, f: Fault): Promise<[string, number]> {
  await fault(node, f);
  return [node, Date.now()];
}
const healAll = async (nodes: string[]) => {
  for (const n of nodes) await fault(n, { kind: "heal" }).catch(() => undefined);
};

const SCENARIOS: Scenario[] = [
  {
    name: "lag",
    bad: [LIGHT[0]!],
    warranted: 0,
    inject: async () => new Map(await holdBack([LIGHT[0]!], { kind: "lag", blocks: MAX_LAG + 2 })),
    watchMs: 6_000,
    heal: () => healAll([LIGHT[0]!]),
    healed: [LIGHT[0]!],
  },
  {
    name: "stall",
    bad: [LIGHT[1]!],
    warranted: 1,
    inject: async () => new Map(await holdBack([LIGHT[1]!], { kind: "stall" })),
    watchMs: 14_000,
    heal: () => healAll([LIGHT[1]!]),
    healed: [LIGHT[1]!],
  },
  {
    name: "fork",
    bad: [LIGHT[2]!],
    warranted: 1,
    inject: async () => new Map([await now(LIGHT[2]!, { kind: "fork" })]),
    watchMs: 12_000,
    heal: () => healAll([LIGHT[2]!]),
    healed: [LIGHT[2]!],
  },
  {
    name: "kill",
    bad: [LIGHT[0]!],
    warranted: 1,
    inject: async () => new Map([await now(LIGHT[0]!, { kind: "kill" })]),
    watchMs: 12_000,
    heal: async () => {},
  },
  {
    name: "hang",
    bad: [LIGHT[1]!],
    warranted: 1,
    inject: async () => {
      const pid = nodePid(LIGHT[1]!);
      if (pid !== undefined) hung.add(pid);
      signal(pid, "SIGSTOP");
      return new Map([[LIGHT[1]!, Date.now()]]);
    },
    watchMs: 14_000,
    heal: async () => {
      for (const pid of hung) signal(pid, "SIGCONT");
      hung.clear();
    },
  },
  {
    name: "one-peer-down",
    bad: [],
    warranted: 0,
    inject: async () => {
      await fault(FULL[0]!, { kind: "kill" });
      await pause(8_000);
      await fault(FULL[0]!, { kind: "heal" });
      return new Map();
    },
    watchMs: 8_000,
    heal: async () => {},
  },
  {
    name: "both-peers-down",
    bad: [],
    warranted: 0,
    inject: async () => {
      await fault(FULL[0]!, { kind: "kill" });
      await fault(FULL[1]!, { kind: "kill" });
      await pause(10_000);
      await healAll(FULL);
      return new Map();
    },
    watchMs: 8_000,
    heal: async () => {},
  },
  {
    // Both full nodes killed for longer, then healed together: they replay their chain from genesis. The reference
    // must not fall to their replaying heads (column "reference fall").
    name: "double-peer-heal",
    bad: [],
    warranted: 0,
    inject: async () => {
      await fault(FULL[0]!, { kind: "kill" });
      await fault(FULL[1]!, { kind: "kill" });
      await pause(30_000);
      await healAll(FULL);
      return new Map();
    },
    watchMs: 10_000,
    heal: async () => {},
  },
  {
    name: "network-halt",
    bad: [],
    warranted: 0,
    inject: async () => {
      await fault(FULL[0]!, { kind: "stall" });
      await fault(FULL[1]!, { kind: "stall" });
      await pause(15_000);
      await healAll(FULL);
      return new Map();
    },
    watchMs: 6_000,
    heal: async () => {},
  },
  {
    name: "wrong-chain-peer",
    bad: [],
    warranted: 0,
    inject: async () => {
      // A third reserved peer on another chain under the same chain id (another genesis), 500 blocks ahead and mining.
      const stranger = await startAnvil({
        name: "stranger",
        chainId: 31_337,
        extraArgs: ["--block-time", "1"],
      });
      try {
        await new HttpRpcClient(stranger.httpUrl, 60_000).call("anvil_mine", ["0x1f4"]);
        await restartController([{ name: "stranger", http: stranger.httpUrl, ws: stranger.wsUrl }]);
        await pause(12_000);
        await restartController();
      } finally {
        await stranger.stop();
      }
      return new Map();
    },
    watchMs: 2_000,
    heal: async () => {},
  },
  {
    name: "two-dead",
    bad: [LIGHT[0]!, LIGHT[1]!],
    warranted: 2,
    inject: async () =>
      new Map([await now(LIGHT[0]!, { kind: "kill" }), await now(LIGHT[1]!, { kind: "kill" })]),
    watchMs: 20_000,
    heal: async () => {},
  },
  {
    name: "two-stalled",
    bad: [LIGHT[1]!, LIGHT[2]!],
    warranted: 2,
    inject: async () => new Map(await holdBack([LIGHT[1]!, LIGHT[2]!], { kind: "stall" })),
    watchMs: 26_000,
    heal: () => healAll([LIGHT[1]!, LIGHT[2]!]),
    healed: [LIGHT[1]!, LIGHT[2]!],
  },
  {
    name: "flap-at-threshold",
    bad: [],
    warranted: 0,
    inject: async () => {
      await fault(LIGHT[0]!, { kind: "lag", blocks: MAX_LAG });
      return new Map();
    },
    watchMs: 12_000,
    heal: () => healAll([LIGHT[0]!]),
    healed: [LIGHT[0]!],
  },
  {
    // Held exactly at maxLagBlocks for long: over the threshold only between a block and its delivery, never routed out.
    name: "threshold-hold",
    bad: [],
    warranted: 0,
    inject: async () => {
      await fault(LIGHT[0]!, { kind: "lag", blocks: MAX_LAG });
      return new Map();
    },
    watchMs: 40_000,
    heal: () => healAll([LIGHT[0]!]),
    healed: [LIGHT[0]!],
  },
  {
    // A killed node is restarted once and replays its chain on a loaded machine: no second restart while it climbs.
    name: "replay-under-load",
    bad: [LIGHT[1]!],
    warranted: 1,
    inject: async () => {
      stopLoad = cpuLoad();
      return new Map([await now(LIGHT[1]!, { kind: "kill" })]);
    },
    watchMs: 30_000,
    heal: async () => {
      stopLoad?.();
      stopLoad = undefined;
    },
  },
  {
    name: "controller-restart-mid-backoff",
    bad: [LIGHT[2]!],
    warranted: 2,
    inject: async () => {
      const before = fleet.members(NETWORK).find((m) => m.name === LIGHT[2])!.restarts.length;
      await fault(LIGHT[2]!, { kind: "kill" });
      const at = Date.now();
      await until(
        () =>
          fleet.members(NETWORK).find((m) => m.name === LIGHT[2] && m.routed && m.restarts.length > before),
        "the first restart to bring it back",
      );
      // Killed again at once: the next restart is due only after the backoff, which a new controller must honour.
      await fault(LIGHT[2]!, { kind: "kill" });
      await pause(2_000);
      await restartController();
      return new Map([[LIGHT[2]!, at]]);
    },
    watchMs: 16_000,
    heal: async () => {},
  },
];

interface Row {
  name: string;
  made: number;
  warranted: number;
  missed: number;
  unwarranted: number;
  routedMs: number | undefined;
  /** Nodes that were not made bad but left routing. */
  goodUnrouted: number;
  unagreed: number;
  /** Blocks the controller's reference head fell below its highest value during the scenario. */
  referenceFall: number;
}

async function canonicalHash(n: number): Promise<string | undefined> {
  const full = devnet.nodes(NETWORK).find((m) => m.role === "full")!;
  const block = await new HttpRpcClient(full.httpUrl, 5_000)
    .call<{ hash: string } | null>("eth_getBlockByNumber", [`0x${n.toString(16)}`, false])
    .catch(() => null);
  return block?.hash;
}

/**
 * Everything back before the next scenario: every node reachable and at the chain's head (or a block from it, on its
 * way), and every light node routed and Healthy with nothing against it in a controller round since the heal. Routed
 * alone is not enough: a node healed behind may be catching up (on geth, syncing from its peers, eth_syncing) while
 * still routed, until the controller's next probe, and would carry that into the next scenario.
 */
async function settle(): Promise<void> {
  for (let i = 0; i < 2; i++) {
    // Two rounds: one under way at the heal may have probed before it.
    const before = controller.lastOutput(NETWORK);
    await until(() => controller.lastOutput(NETWORK) !== before, "a controller round", 90_000);
  }
  const atHead = () =>
    devnet.status().nodes.every((n) => (n.head?.number ?? 0) >= devnet.head(NETWORK).number - 1);
  const caughtUp = () =>
    controller
      .lastOutput(NETWORK)
      ?.nodes.every((n) => n.routed && n.state === "Healthy" && n.reason === "ok") === true;
  await until(
    () =>
      routed().length === 3 &&
      devnet.status().nodes.every((n) => n.reachable !== false) &&
      atHead() &&
      caughtUp(),
    "all routed and caught up",
    90_000,
  ).catch((error: Error) => {
    // Says what was left: the nodes out of routing and the devnet's view of each node.
    const nodes = devnet
      .status()
      .nodes.map(
        (n) => `${n.name} head ${n.head?.number ?? "-"} reachable ${n.reachable} ${n.lastError ?? ""}`,
      );
    const states = controller
      .lastOutput(NETWORK)
      ?.nodes.map((n) => `${n.name} ${n.state} (${n.reason ?? "-"}) routed ${n.routed}`);
    throw new Error(`${error.message}: devnet ${nodes.join("; ")}; controller ${states?.join("; ")}`);
  });
}

const selected = args;
const unknown = selected.filter((s) => !SCENARIOS.some((c) => c.name === s));
if (unknown.length > 0)
  throw new Error(
    `unknown scenario(s) ${unknown.join(", ")}; known: ${SCENARIOS.map((s) => s.name).join(", ")}`,
  );
const rows: Row[] = [];
try {
  await settle();
  for (const scenario of SCENARIOS.filter((s) => selected.length === 0 || selected.includes(s.name))) {
    process.stderr.write(`scenario ${scenario.name}\n`);
    trace(`scenario ${scenario.name}`);
    const restartsBefore = restartCount();
    const servedFrom = served.length;
    const changesFrom = routingChanges.length;
    referenceFall = 0;
    const badAt = await scenario.inject();
    await pause(scenario.watchMs);
    const healAt = Date.now();
    await scenario.heal();
    await settle();
    const restartsAfter = restartCount();
    let made = 0;
    let onBad = 0;
    for (const [name, count] of restartsAfter) {
      const extra = count - (restartsBefore.get(name) ?? 0);
      made += extra;
      if (scenario.bad.includes(name)) onBad += extra;
    }
    const unwarranted = made - Math.min(onBad, scenario.warranted);
    const missed = Math.max(0, scenario.warranted - onBad);
    const routedMs = stayedRoutedMs(routingChanges, changesFrom, badAt, PROBE_MS);
    const goodUnrouted = goodNodesUnrouted(
      routingChanges.slice(changesFrom),
      scenario.bad,
      new Map((scenario.healed ?? []).map((node) => [node, healAt])),
    );
    let unagreed = 0;
    for (const b of served.slice(servedFrom)) if ((await canonicalHash(b.number)) !== b.hash) unagreed++;
    trace(
      `${scenario.name}: turned bad ${[...badAt].map(([n, at]) => `${n} at ${at - benchStart}`).join(", ")}; stayed routed ${routedMs} ms`,
    );
    rows.push({
      name: scenario.name,
      made,
      warranted: scenario.warranted,
      missed,
      unwarranted,
      routedMs,
      goodUnrouted,
      unagreed,
      referenceFall,
    });
  }
} finally {
  stopLoad?.();
  clearInterval(referenceSampler);
  clearInterval(headTracer);
  polling = false;
  await poller;
  ws.close();
  for (const pid of hung) signal(pid, "SIGCONT");
  await controller.stop().catch(() => undefined);
  await up.stop();
  rmSync(dir, { recursive: true, force: true });
}

const header = [
  "scenario",
  "restarts",
  "warranted",
  "missed",
  "unwarranted",
  "bad node routed (s)",
  "good nodes unrouted",
  "unagreed blocks served",
  "reference fall (blocks)",
];
const lines = rows.map((r) => [
  r.name,
  String(r.made),
  String(r.warranted),
  String(r.missed),
  String(r.unwarranted),
  r.routedMs === undefined
    ? "-"
    : Number.isFinite(r.routedMs)
      ? (r.routedMs / 1000).toFixed(2)
      : "never left",
  String(r.goodUnrouted),
  String(r.unagreed),
  String(r.referenceFall),
]);
const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
const format = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i]!)).join("  ");
const total = (key: "missed" | "unwarranted" | "unagreed") => rows.reduce((sum, r) => sum + r[key], 0);
const worst = Math.max(0, ...rows.map((r) => r.routedMs ?? 0));
process.stdout.write(
  [
    `health scenarios on the ${implementation} devnet (block ${BLOCK_MS} ms, probe ${PROBE_MS} ms, maxLagBlocks ${MAX_LAG}, 3 light nodes, 2 full nodes):`,
    format(header),
    ...lines.map(format),
    `totals: ${rows.reduce((s, r) => s + r.made, 0)} restarts for ${rows.reduce((s, r) => s + r.warranted, 0)} warranted, ${total("missed")} missed, ${total("unwarranted")} unwarranted, ${total("unagreed")} unagreed blocks served`,
    `worst time a bad node stayed routed: ${Number.isFinite(worst) ? (worst / 1000).toFixed(2) + " s" : "never left"} (goal: one block + one probe = ${(GOAL_MS / 1000).toFixed(2)} s, ratio ${(worst / GOAL_MS).toFixed(2)})`,
    "",
  ].join("\n"),
);
