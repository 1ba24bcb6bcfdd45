import { spawn } from "node:child_process";
import type { ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "../../src/process/freePort.js";
import { peerBinary, peerBuildError } from "./pins.js";
import type { PeerPin } from "./pins.js";

/** A running peer: its HTTP JSON-RPC URL, its WebSocket URL for newHeads, and how to stop it. */
export interface RunningPeer {
  httpUrl: string;
  wsUrl: string;
  pid: number;
  stop(): Promise<void>;
}

interface Node {
  httpUrl: string;
  wsUrl: string;
  chainId: number;
}

/**
 * Each peer configured as close to the gateway as it allows: one backend (the same node), the head followed every
 * 100 ms, `latest` resolved against that followed head where the peer does it, no response cache (the gateway keeps
 * none for forwarded calls), metrics off (they are off the gateway's hot path too), WebSocket subscriptions on.
 */
function configOf(peer: PeerPin, node: Node, port: number, wsPort: number): { file: string; text: string } {
  if (peer.name === "proxyd")
    return {
      file: "proxyd.toml",
      // consensus_aware: proxyd follows the backend's head and answers eth_blockNumber from it, rewriting `latest`,
      // which is what the gateway's served head does. One backend, so the peer-count check is skipped.
      text: `ws_method_whitelist = ["eth_subscribe", "eth_unsubscribe"]
ws_backend_group = "main"
[server]
rpc_host = "127.0.0.1"
rpc_port = ${port}
ws_host = "127.0.0.1"
ws_port = ${wsPort}
max_body_size_bytes = 10485760
max_concurrent_rpcs = 10000
log_level = "warn"
[metrics]
enabled = false
[backend]
response_timeout_seconds = 5
max_retries = 1
[backends.light]
rpc_url = "${node.httpUrl}"
ws_url = "${node.wsUrl}"
consensus_skip_peer_count = true
[backend_groups.main]
backends = ["light"]
consensus_aware = true
[rpc_method_mappings]
eth_blockNumber = "main"
eth_chainId = "main"
eth_getBlockByNumber = "main"
`,
    };
  return {
    file: "erpc.yaml",
    // No database: eRPC keeps no response cache. Its state poller follows the head like the gateway's head poll.
    text: `logLevel: warn
server:
  listenV4: true
  httpHostV4: 127.0.0.1
  httpPortV4: ${port}
  listenV6: false
  webSocket:
    enabled: true
metrics:
  enabled: false
projects:
  - id: main
    networks:
      - architecture: evm
        evm:
          chainId: ${node.chainId}
    upstreams:
      - id: light
        endpoint: ${node.httpUrl}
        evm:
          chainId: ${node.chainId}
          statePollerInterval: 100ms
`,
  };
}

/**
 * Why a peer is not in the run: the go command's answer from bench/peers/buildPeers.ts (the registry's status and
 * message when it refused the module, without its address), or that it was never built.
 */
export function notBuiltReason(peer: PeerPin): string | undefined {
  if (existsSync(peerBinary(peer))) return undefined;
  if (!existsSync(peerBuildError(peer))) return "not built yet: npm run bench:peers";
  const text = readFileSync(peerBuildError(peer), "utf8");
  const module = `${peer.module}@${peer.version.slice(0, 12)}`;
  const refused = /(\d{3} [A-Za-z ]+?)(?:\\n\\t|\s)+server response: ([^"\\]+)/.exec(text);
  if (refused)
    return `could not be built: the Go module proxy answered ${refused[1]} ("${refused[2]}") for ${module}`;
  const last = text
    .trim()
    .split("\n")
    .slice(-3)
    .join(" ")
    .replace(/https?:\/\/\S+/g, "<registry>");
  return `could not be built (${module}): ${last}`;
}

/** Starts a built peer in front of `node` on ephemeral loopback ports; resolves once it answers eth_blockNumber. */
export async function startPeer(peer: PeerPin, node: Node): Promise<RunningPeer> {
  const dir = mkdtempSync(join(tmpdir(), `bench-${peer.name}-`));
  const port = await freePort();
  const wsPort = peer.name === "proxyd" ? await freePort() : port;
  const { file, text } = configOf(peer, node, port, wsPort);
  writeFileSync(join(dir, file), text);
  const child: ChildProcess = spawn(peerBinary(peer), [join(dir, file)], { cwd: dir, stdio: "ignore" });
  const base = `http://127.0.0.1:${port}`;
  const httpUrl = peer.name === "erpc" ? `${base}/main/evm/${node.chainId}` : `${base}/`;
  const wsUrl =
    peer.name === "erpc" ? `ws://127.0.0.1:${port}/main/evm/${node.chainId}` : `ws://127.0.0.1:${wsPort}/`;
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
    const answered = await fetch(httpUrl, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_blockNumber", params: [] }),
    })
      .then(async (r) => r.ok && "result" in ((await r.json()) as object))
      .catch(() => false);
    if (answered) return { httpUrl, wsUrl, pid: child.pid!, stop };
    if (Date.now() > deadline || child.exitCode !== null) {
      await stop();
      throw new Error(`${peer.name} did not answer eth_blockNumber within 30 s`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}
