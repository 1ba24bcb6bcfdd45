import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { silentLogger } from "../../../src/log/logger.js";
import { spawnChild, stopChild } from "../../../src/process/spawnChild.js";

export interface GethNode {
  httpUrl: string;
  /** The same port: geth serves WebSocket on its HTTP port when both are given the same (here, 0). */
  wsUrl: string;
  pid: number;
  stop(): Promise<void>;
}

/**
 * Starts `geth --dev` on an ephemeral loopback port: a one-node proof-of-stake chain whose simulated beacon seals a
 * block every `periodSeconds` (0: only when a transaction comes), a funded dev account (eth_accounts[0]) that
 * eth_sendTransaction signs for, no peers, no IPC, the engine API on an ephemeral port too, its data in a temporary
 * directory removed on stop. Resolves once the HTTP server listens.
 */
export async function startGethDev(
  binary: string,
  options: { periodSeconds?: number; startTimeoutMs?: number } = {},
): Promise<GethNode> {
  const dataDir = await mkdtemp(join(tmpdir(), "lightfleet-geth-"));
  const args = [
    "--dev",
    "--dev.period",
    String(options.periodSeconds ?? 1),
    "--datadir",
    dataDir,
    "--ipcdisable",
    "--port",
    "0",
    "--authrpc.addr",
    "127.0.0.1",
    "--authrpc.port",
    "0",
    "--http",
    "--http.addr",
    "127.0.0.1",
    "--http.port",
    "0",
    "--ws",
    "--ws.addr",
    "127.0.0.1",
    "--ws.port",
    "0",
    "--verbosity",
    "3",
  ];
  const lastLines: string[] = [];
  let onListening: (port: number) => void = () => undefined;
  const listening = new Promise<number>((resolve) => (onListening = resolve));
  const child = spawnChild({
    command: binary,
    args,
    name: "geth",
    logger: silentLogger(),
    processGroup: true,
    onLine: (line) => {
      lastLines.push(line);
      if (lastLines.length > 8) lastLines.shift();
      const match = /HTTP server started\s+endpoint=127\.0\.0\.1:(\d+)/.exec(line);
      if (match) onListening(Number(match[1]));
    },
  });
  const stop = async () => {
    await stopChild(child, 5_000);
    await rm(dataDir, { recursive: true, force: true });
  };
  const exited = new Promise<never>((_, reject) =>
    child.once("close", (code, signal) =>
      reject(
        new Error(`geth exited before listening (code ${code}, signal ${signal}): ${lastLines.join("\n")}`),
      ),
    ),
  );
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`geth did not listen within ${options.startTimeoutMs ?? 30_000} ms`)),
      options.startTimeoutMs ?? 30_000,
    );
  });
  try {
    const port = await Promise.race([listening, exited, timeout]);
    exited.catch(() => undefined);
    return {
      httpUrl: `http://127.0.0.1:${port}`,
      wsUrl: `ws://127.0.0.1:${port}`,
      pid: child.pid!,
      stop,
    };
  } catch (error) {
    exited.catch(() => undefined);
    await stop();
    throw error;
  } finally {
    clearTimeout(timer);
  }
}
