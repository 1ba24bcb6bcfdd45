/**
 * What an idle `lightfleet gateway` costs: the CPU of the gateway (its workers included) and of the node it follows,
 * with no calls at all, in front of one anvil node (a reserved peer and an upstream, as bench:gateway runs it), for
 * one process and for 2 workers, at a head poll of 100 ms (bench:gateway's) and at the default 1 s. No block is
 * mined while it is counted, so the node's `newHeads` is silent and the gateway polls, as it does between a slow
 * chain's blocks.
 *
 * Counting starts SETTLE_SECONDS after every worker serves: a gateway's first minute or so still holds start-up work
 * paid once per process, not per second idle: workers compiling their code (slower on a loaded machine), and each
 * process's memory reducer, which runs a few full collections of its heap (100-400 ms of CPU) once its allocation rate
 * falls, seen between 20 and 80 s after start. Counted from 3 or 30 s after ready, these fell in the count of some
 * processes and not others, so 2 workers (three processes) came out at 1.1 to 4.8 times one process from row to row
 * and run to run. Prints the primary's and each worker's share (/proc per process).
 *
 *   npm run bench:gateway-idle -- [seconds=20] [profile-directory] [settle-seconds=90]
 *
 * With a directory, each gateway runs with `--cpu-prof` and writes its profiles there (one per process).
 */
import { cpus, loadavg } from "node:os";
import { startDevnet } from "../src/devnet/devnet.js";
import { spawnGatewayProcess } from "./gatewayProcess.js";
import { mineUntilFinalized } from "./peers/chainForPeers.js";
import { cpuSeconds, ownCpuSeconds, processTree } from "./processUsage.js";

const SECONDS = Number(process.argv[2] ?? 20);
const PROFILE_DIR = process.argv[3] || undefined;
const SETTLE_SECONDS = Number(process.argv[4] ?? 90);

const [load1, load5, load15] = loadavg().map((l) => l.toFixed(2));
console.log(`machine before the run: load average ${load1} / ${load5} / ${load15} on ${cpus().length} cores`);

const devnet = await startDevnet({
  networks: [{ name: "bench", chainId: 31_337, lightNodes: 1 }],
  blockTimeMs: 0,
});
const rows: string[] = [];
try {
  const light = devnet.nodes("bench").find((n) => n.role === "light")!;
  await mineUntilFinalized(() => devnet.mine("bench"), light.httpUrl);
  const anvilPid = devnet.status().nodes.find((n) => n.name === light.name)!.pid!;
  const cases = [
    { poll: "100ms", workers: 1 },
    { poll: "100ms", workers: 2 },
    { poll: "1s", workers: 1 },
    { poll: "1s", workers: 2 },
  ];
  for (const { poll, workers } of cases) {
    const gateway = await spawnGatewayProcess({
      workers,
      policy: "rr",
      httpUrl: light.httpUrl,
      wsUrl: light.wsUrl,
      settings: { headPollInterval: poll },
      ...(PROFILE_DIR ? { nodeArgs: ["--cpu-prof", `--cpu-prof-dir=${PROFILE_DIR}`] } : {}),
    });
    try {
      // Start-up (compilation, the first polls, workers forking, the first memory-reducing collections) is not idle
      // work.
      await new Promise((r) => setTimeout(r, SETTLE_SECONDS * 1000));
      // The primary and each worker apart (a process's own CPU, without its children's).
      const processes = processTree(gateway.pid);
      const processBefore = processes.map(ownCpuSeconds);
      const anvilBefore = cpuSeconds(anvilPid);
      const started = performance.now();
      await new Promise((r) => setTimeout(r, SECONDS * 1000));
      const elapsed = (performance.now() - started) / 1000;
      const perSecond = (before: number, after: number) => ((after - before) / elapsed) * 1000;
      const processMs = processes.map((p, i) => perSecond(processBefore[i]!, ownCpuSeconds(p)));
      const anvilMs = perSecond(anvilBefore, cpuSeconds(anvilPid));
      const gatewayMs = processMs.reduce((a, b) => a + b, 0);
      const row =
        `poll ${poll.padEnd(5)} x${workers}: gateway ${gatewayMs.toFixed(1)} ms CPU/s` +
        (workers > 1
          ? ` (primary ${processMs[0]!.toFixed(1)}, workers ${processMs
              .slice(1)
              .map((ms) => ms.toFixed(1))
              .join(" + ")})`
          : "") +
        `, node ${anvilMs.toFixed(1)} ms CPU/s`;
      console.log(row);
      rows.push(row);
    } finally {
      await gateway.stop();
    }
  }
} finally {
  await devnet.stop();
}
console.log(
  `\nidle over ${SECONDS} s, ${SETTLE_SECONDS} s after ready (load average ${load1} before):\n${rows.join("\n")}`,
);
