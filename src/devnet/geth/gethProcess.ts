import type { ChildProcess } from "node:child_process";
import { execFile } from "node:child_process";
import { mkdir, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import type { Logger } from "../../log/logger.js";
import { signalChild, spawnChild, stopChild } from "../../process/spawnChild.js";
import { DEV_ACCOUNT } from "../devTransactions.js";
import { DevnetInputError } from "../errors.js";

const run = promisify(execFile);

/**
 * Accounts funded besides the devnet's own: anvil's second and third default accounts (mnemonic "test test ... junk"),
 * for clients' transactions, as on the anvil devnet.
 */
export const GETH_CLIENT_ACCOUNTS = [
  "0x70997970C51812dc3A010C7d01b50e0d17dc79C8",
  "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC",
];

/** Ether the devnet's dev account holds at genesis (as on anvil, 10,000). */
const DEV_BALANCE = `0x${(10_000n * 10n ** 18n).toString(16)}`;

/**
 * The genesis of one geth network: geth's dev genesis (its system contracts and precompiles funded as they must be),
 * post-merge from block 0, up to Osaka (the fork after it needs engine API calls of its own), on `chainId`, at
 * `timestamp`, with the devnet's dev account and two client accounts funded.
 */
export async function gethGenesis(
  binary: string,
  chainId: number,
  timestamp: number,
): Promise<Record<string, unknown>> {
  let stdout: string;
  try {
    ({ stdout } = await run(binary, ["--dev", "dumpgenesis"], { maxBuffer: 16 * 1024 * 1024 }));
  } catch (error) {
    throw new DevnetInputError(
      `cannot run geth at ${binary} (set devnet.gethBinary or --geth; npm run geth builds one): ` +
        (error as Error).message.split("\n")[0],
    );
  }
  const genesis = JSON.parse(stdout) as {
    config: Record<string, unknown>;
    alloc: Record<string, unknown>;
    timestamp: string;
  };
  genesis.config.chainId = chainId;
  delete genesis.config.bogotaTime;
  genesis.timestamp = `0x${timestamp.toString(16)}`;
  for (const account of [DEV_ACCOUNT, ...GETH_CLIENT_ACCOUNTS])
    genesis.alloc[account.toLowerCase().slice(2)] = { balance: DEV_BALANCE };
  return genesis;
}

/**
 * Makes `dataDir` a fresh geth data directory of this genesis (`geth init`), whatever it held: each start of a devnet
 * node begins empty and is handed the chain from genesis, as an anvil is replayed. (geth killed with SIGKILL keeps its
 * blocks but not the state of the newest ones, and then answers SYNCING to the next block instead of re-executing.)
 */
export async function initGethDataDir(
  binary: string,
  dataDir: string,
  genesis: Record<string, unknown>,
): Promise<void> {
  await rm(join(dataDir, "geth"), { recursive: true, force: true });
  await mkdir(dataDir, { recursive: true });
  const path = join(dataDir, "genesis.json");
  await writeFile(path, JSON.stringify(genesis));
  await run(binary, ["init", "--datadir", dataDir, path]);
}

/** The least priority fee geth's pool accepts (1 wei); its block builder is told to take it too. */
export const GETH_MIN_TIP = 1n;

/**
 * The flags of a devnet geth node: HTTP and WebSocket on one loopback port, the engine API (JWT) on another, no
 * discovery and no IPC, full sync. Heads come through the engine API from the devnet's block driver; a node behind
 * fetches the blocks it lacks from its peers over devp2p (loopback only; peers added by the devnet, none discovered).
 */
export function gethNodeArgs(options: {
  dataDir: string;
  httpPort: number | string;
  enginePort: number | string;
  jwtSecret: string;
}): string[] {
  return [
    ...["--datadir", options.dataDir, "--ipcdisable", "--nodiscover", "--port", "0", "--syncmode", "full"],
    // devp2p on loopback only, with the peers the devnet adds (admin_addPeer): a node behind syncs from them.
    ...["--nat", "extip:127.0.0.1", "--netrestrict", "127.0.0.0/8"],
    ...["--http", "--http.addr", "127.0.0.1", "--http.port", String(options.httpPort)],
    ...["--http.api", "eth,net,web3,txpool,admin,debug"],
    ...["--ws", "--ws.addr", "127.0.0.1", "--ws.port", String(options.httpPort)],
    ...["--ws.api", "eth,net,web3"],
    ...["--authrpc.addr", "127.0.0.1", "--authrpc.port", String(options.enginePort)],
    ...["--authrpc.jwtsecret", options.jwtSecret],
    ...["--miner.gasprice", String(GETH_MIN_TIP)],
  ];
}

/**
 * The command of a fleet member of a geth devnet (`networks[].nodes.command`): the placeholders are filled in per
 * member, and the devnet readies `{dataDir}` before each start.
 */
export const GETH_MEMBER_COMMAND: readonly string[] = [
  "{geth}",
  ...gethNodeArgs({
    dataDir: "{dataDir}",
    httpPort: "{port}",
    enginePort: "{enginePort}",
    jwtSecret: "{jwtSecret}",
  }),
];

export interface GethProcess {
  httpPort: number;
  enginePort: number;
  process: ChildProcess;
  alive(): boolean;
  kill(): Promise<void>;
  stop(): Promise<void>;
}

/** Starts geth on an initialised data directory; resolves once both its HTTP and engine servers listen. */
export async function startGethProcess(options: {
  binary: string;
  name: string;
  dataDir: string;
  jwtSecret: string;
  /** 0 picks a free port. */
  httpPort: number;
  enginePort: number;
  logger: Logger;
  startTimeoutMs?: number;
}): Promise<GethProcess> {
  const seen = { http: 0, engine: 0 };
  const lastLines: string[] = [];
  let ready: () => void = () => undefined;
  const started = new Promise<void>((resolve) => (ready = resolve));
  const child = spawnChild({
    command: options.binary,
    args: gethNodeArgs(options),
    name: options.name,
    logger: options.logger,
    processGroup: true,
    onLine: (line) => {
      lastLines.push(line);
      if (lastLines.length > 8) lastLines.shift();
      const endpoint = /HTTP server started\s+endpoint=127\.0\.0\.1:(\d+)\s+auth=(true|false)/.exec(line);
      if (endpoint) seen[endpoint[2] === "true" ? "engine" : "http"] = Number(endpoint[1]);
      if (seen.http && seen.engine) ready();
    },
  });
  const alive = () => child.exitCode === null && child.signalCode === null;
  const node: GethProcess = {
    httpPort: 0,
    enginePort: 0,
    process: child,
    alive,
    kill: async () => {
      if (!alive()) return;
      const exited = new Promise((resolve) => child.once("exit", resolve));
      signalChild(child, "SIGKILL");
      await exited;
    },
    stop: () => stopChild(child, 5_000),
  };
  const timeoutMs = options.startTimeoutMs ?? 60_000;
  let timer: NodeJS.Timeout | undefined;
  let onClose: (() => void) | undefined;
  try {
    await Promise.race([
      started,
      new Promise<never>((_, reject) => {
        onClose = () =>
          reject(new Error(`${options.name}: geth exited before listening: ${lastLines.join("\n")}`));
        child.once("close", onClose);
      }),
      new Promise<never>(
        (_, reject) =>
          (timer = setTimeout(
            () => reject(new Error(`${options.name}: geth did not listen within ${timeoutMs} ms`)),
            timeoutMs,
          )),
      ),
    ]);
  } catch (error) {
    await node.stop();
    throw error;
  } finally {
    clearTimeout(timer);
    if (onClose) child.off("close", onClose);
  }
  node.httpPort = seen.http;
  node.enginePort = seen.engine;
  return node;
}
