import { spawn } from "node:child_process";
import type { ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "../../src/process/freePort.js";
import { erpcConfig, erpcFeatures, proxydConfig } from "./peerConfig.js";
import type { ErpcSettings, PeerNode } from "./peerConfig.js";
import { peerBinary } from "./peers.js";
import type { Peer } from "./peers.js";

/** A running peer: its HTTP JSON-RPC URL, its WebSocket URL for newHeads (none where it serves none), how to stop it. */
export interface RunningPeer {
  httpUrl: string;
  wsUrl?: string;
  /** Why it has no WebSocket URL. */
  noWebSocket?: string;
  metricsUrl?: string;
  pid: number;
  stop(): Promise<void>;
}

export interface PeerOptions {
  chainId: number;
  /** The nodes behind it: proxyd takes the first one. */
  upstreams: readonly PeerNode[];
  /** eRPC only: see ErpcSettings. */
  hedge?: ErpcSettings["hedge"];
  cache?: boolean;
  metrics?: boolean;
}

/** Starts a built peer in front of the nodes on ephemeral loopback ports; resolves once it answers eth_blockNumber. */
export async function startPeer(peer: Peer, options: PeerOptions): Promise<RunningPeer> {
  const binary = peerBinary(peer);
  const dir = mkdtempSync(join(tmpdir(), `bench-${peer.name}-`));
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  let file: string;
  let urls: Omit<RunningPeer, "pid" | "stop">;
  if (peer.name === "proxyd") {
    const wsPort = await freePort();
    file = join(dir, "proxyd.toml");
    writeFileSync(file, proxydConfig(options.upstreams[0]!, port, wsPort));
    urls = { httpUrl: `${base}/`, wsUrl: `ws://127.0.0.1:${wsPort}/` };
  } else {
    const features = erpcFeatures(readFileSync(binary));
    const metricsPort = options.metrics ? await freePort() : undefined;
    file = join(dir, "erpc.yaml");
    writeFileSync(
      file,
      erpcConfig(features, { ...options, port, metricsPort, upstreams: options.upstreams }),
    );
    const path = `/main/evm/${options.chainId}`;
    urls = {
      httpUrl: `${base}${path}`,
      ...(features.webSocket
        ? { wsUrl: `ws://127.0.0.1:${port}${path}` }
        : { noWebSocket: "no WebSocket (this eRPC build has no server.webSocket)" }),
      ...(metricsPort === undefined ? {} : { metricsUrl: `http://127.0.0.1:${metricsPort}/metrics` }),
    };
  }
  // eRPC takes its config file as the first argument, proxyd as its only one.
  const child: ChildProcess = spawn(binary, [file], { cwd: dir, stdio: "ignore" });
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  };
  const deadline = Date.now() + 30_000;
  for (;;) {
    const answered = await fetch(urls.httpUrl, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_blockNumber", params: [] }),
    })
      .then(async (r) => r.ok && "result" in ((await r.json()) as object))
      .catch(() => false);
    if (answered) return { ...urls, pid: child.pid!, stop };
    if (Date.now() > deadline || child.exitCode !== null) {
      await stop();
      throw new Error(`${peer.name} did not answer eth_blockNumber within 30 s`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}
