import { accessSync, constants, mkdirSync } from "node:fs";
import { delimiter, join } from "node:path";
import type { Logger } from "../../log/logger.js";
import { freePort } from "../../process/freePort.js";
import { spawnChild, stopChild } from "../../process/spawnChild.js";

/** The time redis-server has to say it accepts connections. */
const START_TIMEOUT_MS = 15_000;

export interface LocalRedis {
  url: string;
  pid: number | undefined;
  stop(): Promise<void>;
}

/** The first executable `name` on PATH, if any. */
export function findOnPath(name: string, path = process.env.PATH ?? ""): string | undefined {
  for (const dir of path.split(delimiter)) {
    if (!dir) continue;
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // Not here.
    }
  }
  return undefined;
}

/**
 * A redis-server for the gateway replicas of `up`: loopback only, an ephemeral port, no persistence (the state is
 * per run: filters, limits, the head's mark), in its own process group so Ctrl-C reaches `up`, which stops it last.
 */
export async function startLocalRedis(dataDir: string, logger: Logger): Promise<LocalRedis> {
  const binary = findOnPath("redis-server");
  if (!binary)
    throw new Error(
      "gateway.replicas above 1 needs Redis for the replicas' shared state, and redis-server is not on PATH: " +
        "install it (Debian/Ubuntu: apt-get install redis-server; macOS: brew install redis), or set " +
        "gateway.sharedState to { backend: redis, url: redis://HOST:PORT } for a Redis or Valkey you run",
    );
  const dir = join(dataDir, "redis");
  mkdirSync(dir, { recursive: true });
  const port = await freePort();
  let ready: () => void = () => undefined;
  const accepting = new Promise<void>((resolve) => (ready = resolve));
  const child = spawnChild({
    command: binary,
    args: [
      ...["--port", String(port), "--bind", "127.0.0.1", "--dir", dir],
      ...["--save", "", "--appendonly", "no"],
    ],
    name: "redis",
    logger,
    processGroup: true,
    onLine: (line) => {
      if (line.includes("Ready to accept connections")) ready();
    },
  });
  const exited = new Promise<never>((_, reject) =>
    child.once("exit", (code, signal) =>
      reject(
        new Error(`redis-server exited while starting (code ${code}, signal ${signal}) on port ${port}`),
      ),
    ),
  );
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`redis-server did not accept connections within ${START_TIMEOUT_MS} ms`)),
      START_TIMEOUT_MS,
    );
  });
  try {
    await Promise.race([accepting, exited, late]);
  } catch (error) {
    await stopChild(child);
    throw error;
  } finally {
    clearTimeout(timer);
  }
  exited.catch(() => undefined);
  return {
    url: `redis://127.0.0.1:${port}`,
    pid: child.pid,
    stop: () => stopChild(child),
  };
}
