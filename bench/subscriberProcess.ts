import { spawn } from "node:child_process";
import { join } from "node:path";
import { withRaisedFileLimit } from "./gatewayProcess.js";

/** Loopback source addresses of the subscribers: 127.0.0.2 to 127.0.0.9. */
const FIRST_SOURCE = 2;
const SOURCES = 8;

/** When each block was announced by the node and reached each subscriber (epoch ms), by block hash. */
export interface Arrivals {
  announced: Record<string, number>;
  arrivals: Record<string, number[]>;
}

/** A process of newHeads subscribers (bench/gatewayFanOutClients.ts), all subscribed. */
export interface Subscribers {
  kill(): void;
  /** Blocks that every subscriber of this process has received. */
  complete(): number;
  /** Ends the subscribers; their record of announcements and arrivals. */
  finish(): Promise<Arrivals>;
}

/**
 * `count` newHeads subscribers of `wsUrl` in a process of their own (so reading the notifications does not share the
 * server's event loop), with a direct subscription to the node at `nodeWsUrl` for the reference time; resolves once
 * all are subscribed, or fails at `deadline` (epoch ms) or when the server serves no WebSocket.
 */
export async function startSubscribers(
  wsUrl: string,
  count: number,
  nodeWsUrl: string,
  deadline: number,
): Promise<Subscribers> {
  const child = spawn(
    ...withRaisedFileLimit(process.execPath, [
      "--import",
      "tsx",
      join(import.meta.dirname, "gatewayFanOutClients.ts"),
      wsUrl,
      String(count),
      nodeWsUrl,
      String(FIRST_SOURCE),
      String(SOURCES),
    ]),
    // tsx is resolved from the package root, wherever the benchmark is started from.
    { stdio: ["pipe", "pipe", "inherit"], cwd: join(import.meta.dirname, "..") },
  );
  let output = "";
  child.stdout.on("data", (data: Buffer) => (output += String(data)));
  while (!output.includes("ready\n")) {
    // The server answered the WebSocket upgrade with something else (gatewayFanOutClients.ts says so).
    const refusal = /^no WebSocket.*$/m.exec(output);
    if (refusal) {
      child.kill();
      throw new Error(refusal[0]);
    }
    if (Date.now() > deadline || child.exitCode !== null) {
      child.kill();
      throw new Error(`${count} subscribers did not all subscribe in time`);
    }
    await new Promise((r) => setTimeout(r, 20));
  }
  return {
    kill: () => child.kill(),
    complete: () => output.split("\nall ").length - 1,
    async finish() {
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.stdin.write("done\n");
      await exited;
      return JSON.parse(output.trim().split("\n").at(-1)!) as Arrivals;
    },
  };
}
