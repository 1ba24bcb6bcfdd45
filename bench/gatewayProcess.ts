import { execFileSync, spawn } from "node:child_process";
import type { ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SERVICE_NODE_FLAGS } from "../src/process/serviceNodeFlags.js";
import { ensureBuilt } from "./builtGateway.js";
import { MEMORY_PROBE_ENV, MEMORY_PROBE_NODE_ARGS } from "./processUsage.js";

/** A server the benchmark runs as a process of its own. */
export interface ChildServer {
  url: string;
  /** The server's process id (its CPU time and memory are read from /proc). */
  pid: number;
  stop(): Promise<void>;
}

const ROOT = join(import.meta.dirname, "..");

/**
 * Each server's unmeasured load before a bench measures it, per call (LIGHTFLEET_BENCH_WARM_UP_SECONDS, 10 s): V8
 * compiles a server's call path over its first seconds of load (the gateway's forwarding for about 20 s).
 */
export const WARM_UP_SECONDS = Number(process.env.LIGHTFLEET_BENCH_WARM_UP_SECONDS ?? 10);

/**
 * A command run with its open-file limit raised to the hard limit (thousands of subscribers are as many sockets), by
 * the shell, which then becomes the command itself: the child's pid is the command's.
 */
export function withRaisedFileLimit(command: string, args: string[]): [string, string[]] {
  return ["sh", ["-c", 'ulimit -n "$(ulimit -Hn)" 2>/dev/null; exec "$0" "$@"', command, ...args]];
}

/**
 * `lightfleet gateway` as shipped (dist/cli.js, built first when src/ is newer) with `gateway.workers: workers` as a process of its own (node:cluster needs one), in front of
 * one node, on ephemeral ports; resolves once every worker serves a head. `policy` is node:cluster's
 * NODE_CLUSTER_SCHED_POLICY: rr (the primary hands out connections) or none (the kernel does).
 */
export async function spawnGatewayProcess(options: {
  workers: number;
  policy: "rr" | "none";
  httpUrl: string;
  wsUrl: string;
  /** More `gateway:` settings. */
  settings?: Record<string, unknown>;
  /** More settings of the network's `gateway:` section (its upstreams, by default the one node above). */
  networkGateway?: Record<string, unknown>;
  /** Flags for node itself, e.g. `--cpu-prof` (which NODE_OPTIONS does not take), after `nodeFlags`. */
  nodeArgs?: string[];
  /** Node's flags in place of the image's (SERVICE_NODE_FLAGS), which the gateway runs with by default. */
  nodeFlags?: readonly string[];
  /** A command that runs node, e.g. valgrind with its flags; the process id is then the wrapper's. */
  wrapper?: string[];
  /** How long it may take to get ready (longer under a wrapper such as valgrind); 60 s by default. */
  readyTimeoutMs?: number;
  /** Sources compiled with bench/ (`compileForBench`); by default the built `dist/` (`npm run build`) runs. */
  compiled?: string;
}): Promise<ChildServer & { adminUrl: string }> {
  const dir = mkdtempSync(join(tmpdir(), "bench-gateway-"));
  const file = join(dir, "gateway.yaml");
  writeFileSync(
    file,
    JSON.stringify({
      log: { format: "json", level: "info" },
      admin: { host: "127.0.0.1" },
      gateway: {
        host: "127.0.0.1",
        headPollInterval: "100ms",
        workers: options.workers,
        ...options.settings,
      },
      networks: [
        {
          name: "bench",
          chainId: 31_337,
          blockTime: "12s",
          reservedPeers: [{ name: "light", http: options.httpUrl }],
          gateway: {
            default: true,
            upstreams: [{ name: "light", http: options.httpUrl, ws: options.wsUrl }],
            ...options.networkGateway,
          },
        },
      ],
    }),
  );
  const [command, ...wrapperArgs] = [...(options.wrapper ?? []), process.execPath];
  const child: ChildProcess = spawn(
    ...withRaisedFileLimit(command!, [
      ...wrapperArgs,
      ...MEMORY_PROBE_NODE_ARGS,
      ...(options.nodeFlags ?? SERVICE_NODE_FLAGS),
      ...(options.nodeArgs ?? []),
      options.compiled ? join(options.compiled, "src/cli.js") : ensureBuilt(),
      "gateway",
      "--config",
      file,
      "--port",
      "0",
      "--admin-port",
      "0",
    ]),
    {
      cwd: ROOT,
      env: { ...process.env, ...MEMORY_PROBE_ENV, NODE_CLUSTER_SCHED_POLICY: options.policy },
      stdio: ["ignore", "pipe", "inherit"],
    },
  );
  let stdout = "";
  child.stdout!.on("data", (chunk: Buffer) => (stdout += String(chunk)));
  const stop = async () => {
    await stopChild(child);
    rmSync(dir, { recursive: true, force: true });
  };
  const deadline = Date.now() + (options.readyTimeoutMs ?? 60_000);
  for (;;) {
    const line = stdout.split("\n").find((l) => l.includes('"gateway serving"'));
    if (line) {
      const { url, admin } = JSON.parse(line) as { url: string; admin: string };
      const ready = await fetch(`${admin}/readyz`)
        .then((r) => r.ok)
        .catch(() => false);
      if (ready) return { url, adminUrl: admin, pid: child.pid!, stop };
    }
    if (Date.now() > deadline || child.exitCode !== null) {
      await stop();
      throw new Error(`the gateway with ${options.workers} workers did not get ready`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * The sources and bench/ compiled by tsc (tsconfig.bench.json) into the bench's cache directory, for servers run by
 * node as the image runs the gateway: tsx names every function it creates at run time, a cost per request that
 * `node dist/cli.js` does not pay. Returns the directory.
 */
export function compileForBench(): string {
  execFileSync(
    process.execPath,
    [join(ROOT, "node_modules/typescript/bin/tsc"), "-p", "tsconfig.bench.json"],
    {
      cwd: ROOT,
      stdio: "inherit",
    },
  );
  return join(ROOT, "node_modules/.cache/lightfleet/bench");
}

/**
 * A bench/ script run as a process of its own (so it does not share the benchmark's event loop), once it prints
 * "listening <url>".
 */
export async function spawnListening(
  script: string,
  args: string[] = [],
  /** As spawnGatewayProcess's `compiled`. */
  compiled?: string,
  /** As spawnGatewayProcess's `wrapper` and `readyTimeoutMs`. */
  run: { wrapper?: string[]; readyTimeoutMs?: number } = {},
): Promise<ChildServer> {
  const command = compiled
    ? [join(compiled, "bench", script.replace(/\.ts$/, ".js"))]
    : ["--import", "tsx", join(ROOT, "bench", script)];
  const [executable, ...wrapperArgs] = [...(run.wrapper ?? []), process.execPath];
  const child = spawn(
    ...withRaisedFileLimit(executable!, [...wrapperArgs, ...MEMORY_PROBE_NODE_ARGS, ...command, ...args]),
    {
      cwd: ROOT,
      env: { ...process.env, ...MEMORY_PROBE_ENV },
      stdio: ["ignore", "pipe", "inherit"],
    },
  );
  let stdout = "";
  try {
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`${script} did not start listening`)),
        run.readyTimeoutMs ?? 60_000,
      );
      child.stdout!.on("data", (chunk: Buffer) => {
        stdout += String(chunk);
        const line = /^listening (\S+)$/m.exec(stdout);
        if (line) {
          clearTimeout(timer);
          resolve(line[1]!);
        }
      });
      child.once("exit", (code) => {
        clearTimeout(timer);
        reject(new Error(`${script} exited (${code}) before listening`));
      });
    });
    return { url, pid: child.pid!, stop: () => stopChild(child) };
  } catch (error) {
    await stopChild(child);
    throw error;
  }
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGTERM");
  await exited;
}
