import { spawn } from "node:child_process";
import type { ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "../../src/process/freePort.js";
import { findTool } from "./requireTool.js";
import { waitFor } from "./waitFor.js";

export { freePort } from "../../src/process/freePort.js";

/** Debian's redis-server, or why it is missing (an error in CI). */
export const redisTool = findTool("redis-server", "redis-server");

/** True once something accepts connections on the port. */
function accepting(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = new Socket();
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
    socket.connect(port, "127.0.0.1");
  });
}

export interface RedisServer {
  url: string;
  port: number;
  /** Kills the server (SIGKILL, as a crash would) and waits for it to exit. */
  kill(): Promise<void>;
  /** Starts it again on the same port, with what it had written to its append-only file. */
  restart(): Promise<void>;
  /** Kills it and removes its directory. */
  stop(): Promise<void>;
}

/**
 * A real redis-server on an ephemeral loopback port with a temporary directory (its append-only file, synced at every
 * write), in its own process group; `stop` leaves nothing behind.
 */
export async function startRedis(): Promise<RedisServer> {
  if (!redisTool.path) throw new Error(redisTool.missing);
  const dir = mkdtempSync(join(tmpdir(), `lightfleet-redis-${process.pid}-`));
  const port = await freePort();
  let child: ChildProcess | undefined;
  const start = async () => {
    child = spawn(
      redisTool.path!,
      [
        ...["--port", String(port), "--bind", "127.0.0.1", "--dir", dir, "--save", ""],
        // Every write on disk before it is answered, as a Redis that keeps the gateway's filters over a restart.
        ...["--appendonly", "yes", "--appendfsync", "always"],
      ],
      { detached: true, stdio: "ignore" },
    );
    const exited = new Promise<void>((resolve) => child!.once("exit", () => resolve()));
    let gone = false;
    void exited.then(() => (gone = true));
    await waitFor(
      async () => {
        if (gone) throw new Error(`redis-server exited while starting on port ${port}`);
        return accepting(port);
      },
      { what: `redis-server on port ${port}`, timeoutMs: 10_000 },
    );
  };
  const kill = async () => {
    const running = child;
    if (!running || running.exitCode !== null || running.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => running.once("exit", () => resolve()));
    process.kill(-running.pid!, "SIGKILL");
    await exited;
  };
  await start();
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    kill,
    restart: start,
    async stop() {
      await kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
