import type { ChildProcess } from "node:child_process";
import { extname } from "node:path";
import { fileURLToPath } from "node:url";
import type { Config } from "../../config/schema.js";
import type { UpstreamSource } from "../../gateway/upstreams/upstreamSource.js";
import type { Logger } from "../../log/logger.js";
import { spawnChild, stopChild } from "../../process/spawnChild.js";
import type { FromReplica, ToReplica } from "./replicaMessages.js";

/** A replica that exited on its own is started again after this long. */
const RESTART_BACKOFF_MS = 1_000;
/** Log levels of pino's JSON lines, by number. */
const LEVELS: Record<number, "debug" | "info" | "warn" | "error"> = {
  20: "debug",
  30: "info",
  40: "warn",
  50: "error",
  60: "error",
};

/** The replica's own entry point, next to this file (.ts under tsx, .js as built). */
const REPLICA_MAIN = fileURLToPath(
  new URL(`./replicaMain${extname(fileURLToPath(import.meta.url))}`, import.meta.url),
);

export interface ReplicaSetOptions {
  count: number;
  /** The config each replica serves (shared state in Redis). */
  config: Config;
  source: UpstreamSource;
  logger: Logger;
}

/** One replica as `up` sees it. */
export interface ReplicaState {
  name: string;
  /** http://127.0.0.1:port once it has listened (the same port again after a restart). */
  url: string | undefined;
  pid: number | undefined;
  /** Serving: listening, and the process has not exited since. */
  serving: boolean;
  heads: Record<string, number | null>;
  restarts: number;
}

interface Replica extends ReplicaState {
  child: ChildProcess | undefined;
  port: number;
  /** Calls to nodes by earlier incarnations, per network (the counters start again at each start). */
  pastTotals: Map<string, number>;
  totals: Record<string, number>;
}

/**
 * The gateway replica processes of `up`: each a child (`replicaMain`) on a loopback port of its own, told the
 * fleet's upstreams whenever they change, started again when it exits on its own. Their log lines join `up`'s log
 * under the replica's name.
 */
export class ReplicaSet {
  private readonly replicas: Replica[];
  private stopping = false;
  private readonly unsubscribe: () => void;
  private readonly listeners = new Set<(replica: ReplicaState) => void>();

  constructor(private readonly options: ReplicaSetOptions) {
    this.replicas = Array.from({ length: options.count }, (_, i) => ({
      name: `gateway-${i + 1}`,
      url: undefined,
      pid: undefined,
      serving: false,
      heads: {},
      restarts: 0,
      child: undefined,
      port: 0,
      pastTotals: new Map(),
      totals: {},
    }));
    this.unsubscribe = options.source.onChange((network) => {
      for (const replica of this.replicas) this.sendUpstreams(replica, network);
    });
  }

  /** Starts every replica; resolves once each listens (rejects if one fails to). */
  async start(): Promise<void> {
    await Promise.all(this.replicas.map((replica) => this.spawn(replica)));
  }

  /** The replicas now (for the front, the banner and readiness). */
  list(): ReadonlyArray<ReplicaState> {
    return this.replicas;
  }

  /** Called when a replica starts serving or stops (exits). */
  onChange(listener: (replica: ReplicaState) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Calls sent to nodes per network, over every replica and incarnation (the autoscaler's counters). */
  requestTotals(): ReadonlyMap<string, number> {
    const sum = new Map<string, number>();
    for (const replica of this.replicas) {
      for (const [network, n] of replica.pastTotals) sum.set(network, (sum.get(network) ?? 0) + n);
      for (const [network, n] of Object.entries(replica.totals))
        sum.set(network, (sum.get(network) ?? 0) + n);
    }
    return sum;
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.unsubscribe();
    await Promise.all(this.replicas.map((r) => (r.child ? stopChild(r.child, 15_000) : undefined)));
  }

  private spawn(replica: Replica): Promise<void> {
    const { config, logger } = this.options;
    const log = logger.child({ replica: replica.name });
    const child = spawnChild({
      command: process.execPath,
      // Under tsx (a checkout) the loader comes along; as built, none.
      args: [...process.execArgv, REPLICA_MAIN],
      name: replica.name,
      logger,
      processGroup: true,
      ipc: true,
      onLine: (line) => relog(log, line),
    });
    replica.child = child;
    replica.pid = child.pid;
    const listening = new Promise<void>((resolve, reject) => {
      child.on("message", (message: FromReplica) => {
        if (message.kind === "listening") {
          replica.url = message.url;
          replica.port = Number(new URL(message.url).port);
          replica.serving = true;
          log.info({ url: message.url, pid: child.pid }, "gateway replica serving");
          this.changed(replica);
          resolve();
        } else if (message.kind === "status") {
          replica.heads = message.heads;
          replica.totals = message.totals;
        } else reject(new Error(`gateway replica ${replica.name} failed to start: ${message.message}`));
      });
      child.once("exit", (code, signal) => {
        reject(
          new Error(`gateway replica ${replica.name} exited while starting (code ${code}, signal ${signal})`),
        );
        this.exited(replica, child, code, signal);
      });
    });
    const start: ToReplica = {
      kind: "start",
      config,
      host: "127.0.0.1",
      port: replica.port,
      name: replica.name,
    };
    child.send(start);
    for (const network of config.networks) this.sendUpstreams(replica, network.name);
    return listening;
  }

  private exited(replica: Replica, child: ChildProcess, code: number | null, signal: string | null): void {
    if (replica.child !== child) return;
    // One that never listened may have found its port taken: the next try takes any free one.
    if (!replica.serving) replica.port = 0;
    replica.child = undefined;
    replica.serving = false;
    replica.heads = {};
    for (const [network, n] of Object.entries(replica.totals))
      replica.pastTotals.set(network, (replica.pastTotals.get(network) ?? 0) + n);
    replica.totals = {};
    this.changed(replica);
    if (this.stopping) return;
    replica.restarts++;
    this.options.logger.warn(
      { replica: replica.name, code, signal, restartInMs: RESTART_BACKOFF_MS },
      "gateway replica exited; starting it again",
    );
    setTimeout(() => {
      if (this.stopping) return;
      this.spawn(replica).catch((error: Error) => {
        // Its exit is logged and it is tried again (unless `up` is stopping, which stopped it).
        if (!this.stopping)
          this.options.logger.error(
            { replica: replica.name, err: error.message },
            "gateway replica did not start",
          );
      });
    }, RESTART_BACKOFF_MS).unref();
  }

  private sendUpstreams(replica: Replica, network: string): void {
    const child = replica.child;
    if (!child?.connected) return;
    const message: ToReplica = {
      kind: "upstreams",
      network,
      upstreams: this.options.source.upstreams(network),
    };
    child.send(message);
  }

  private changed(replica: Replica): void {
    for (const listener of this.listeners) listener(replica);
  }
}

/** A replica's JSON log line, logged by `up` at its level with its fields; any other line at debug. */
function relog(log: Logger, line: string): void {
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(line) as Record<string, unknown>;
  } catch {
    log.debug(line);
    return;
  }
  const { level, msg, time: _time, pid: _pid, hostname: _host, ...fields } = entry;
  const method = LEVELS[Number(level)] ?? "info";
  log[method](fields, typeof msg === "string" ? msg : "");
}
