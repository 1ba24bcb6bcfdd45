import type { ChildProcess } from "node:child_process";
import type { Logger } from "../log/logger.js";
import { silentLogger } from "../log/logger.js";
import { anvilBinary } from "../process/anvilBinary.js";
import { spawnChild, stopChild } from "../process/spawnChild.js";

export interface AnvilOptions {
  name: string;
  chainId: number;
  /** Genesis timestamp (seconds); nodes started with the same one agree on block hashes when mined alike. */
  timestamp?: number;
  /** 0 picks a free port. */
  port?: number;
  /** Loopback address to listen on (default 127.0.0.1; other 127.x addresses let several nodes share a port). */
  host?: string;
  /** Mine only on evm_mine (the devnet's block driver decides when blocks happen). */
  noMining?: boolean;
  extraArgs?: string[];
  /** Runs anvil through this command prefix (e.g. `ip netns exec NAME`, to listen inside another network namespace). */
  launcher?: string[];
  logger?: Logger;
  startTimeoutMs?: number;
}

export interface AnvilNode {
  name: string;
  httpUrl: string;
  wsUrl: string;
  port: number;
  process: ChildProcess;
  stop(): Promise<void>;
}

/** Starts one anvil node on a loopback address and resolves once it listens. */
export function startAnvil(options: AnvilOptions): Promise<AnvilNode> {
  const args = [
    "--host",
    options.host ?? "127.0.0.1",
    "--port",
    String(options.port ?? 0),
    "--chain-id",
    String(options.chainId),
  ];
  if (options.timestamp !== undefined) args.push("--timestamp", String(options.timestamp));
  if (options.noMining) args.push("--no-mining");
  args.push(...(options.extraArgs ?? []));
  return new Promise((resolve, reject) => {
    let settled = false;
    /** The last lines it printed: anvil says why it exits (a port in use, a bad flag) on stderr. */
    const lastLines: string[] = [];
    const [command, ...prefix] = [...(options.launcher ?? []), anvilBinary()];
    const child = spawnChild({
      command: command!,
      args: [...prefix, ...args],
      name: options.name,
      logger: options.logger ?? silentLogger(),
      // Its own group: a terminal's Ctrl-C reaches only the supervisor, which stops the nodes in order (a node dying
      // first would read as a fault). The group's guard still kills it if the supervisor dies.
      processGroup: true,
      onLine: (line) => {
        lastLines.push(line);
        if (lastLines.length > 5) lastLines.shift();
        const match = /Listening on [\d.]+:(\d+)/.exec(line);
        if (!match || settled) return;
        settled = true;
        clearTimeout(timer);
        const port = Number(match[1]);
        resolve({
          name: options.name,
          port,
          httpUrl: `http://${options.host ?? "127.0.0.1"}:${port}`,
          wsUrl: `ws://${options.host ?? "127.0.0.1"}:${port}`,
          process: child,
          stop: () => stopChild(child),
        });
      },
    });
    const fail = (message: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      child.kill("SIGKILL");
      reject(new Error(`anvil ${options.name}: ${message}`));
    };
    const timer = setTimeout(() => fail("did not start listening in time"), options.startTimeoutMs ?? 15_000);
    child.once("error", (error) => fail(error.message));
    // "close" (not "exit"): by then every line it printed has been read.
    child.once("close", (code, signal) => fail(exitMessage(options.port ?? 0, code, signal, lastLines)));
  });
}

/** Why anvil exited before listening, naming the port when it was taken. */
function exitMessage(
  port: number,
  code: number | null,
  signal: NodeJS.Signals | null,
  lines: readonly string[],
): string {
  const said = lines
    .filter((l) => l.trim() !== "")
    .at(-1)
    ?.trim();
  if (said !== undefined && /address already in use/i.test(said))
    return `port ${port} is in use (another devnet, or another program, listens there): ${said}`;
  return `exited before listening (code ${code}, signal ${signal})${said ? `: ${said}` : ""}`;
}
