import { writeFileSync } from "node:fs";
import { Registry } from "prom-client";
import WebSocket from "ws";
import { parseConfig } from "../../src/config/loadConfig.js";
import type { AnvilNode } from "../../src/devnet/anvil.js";
import { startAnvil } from "../../src/devnet/anvil.js";
import type { Devnet } from "../../src/devnet/devnet.js";
import type { Gateway } from "../../src/gateway/gateway.js";
import { startGateway } from "../../src/gateway/gateway.js";
import { StaticUpstreamSource } from "../../src/gateway/upstreams/staticSource.js";
import type { Upstream } from "../../src/gateway/upstreams/upstreamSource.js";
import { silentLogger } from "../../src/log/logger.js";
import { HttpRpcClient } from "../../src/rpc/httpRpcClient.js";
import { waitFor, waitForProgress } from "../support/waitFor.js";

/** A JSON answer, inspected field by field by the assertions. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- any JSON shape, checked by expect()
export type Json = any;

export const NETWORK = "devnet";
export const CHAIN_ID = 31_337;

/**
 * A gateway on an ephemeral port in front of the devnet's light nodes, all routed; `upstream` may change how each
 * node is reached.
 */
export async function startTestGateway(
  devnet: Devnet,
  gateway: Record<string, unknown> = {},
  network: Record<string, unknown> = {},
  upstream: (u: Upstream) => Upstream = (u) => u,
  /** Network options besides its gateway section (blockTime, ...). */
  networkOptions: Record<string, unknown> = {},
): Promise<{ gateway: Gateway; source: StaticUpstreamSource; registry: Registry; wsUrl: string }> {
  const nodes = devnet.nodes(NETWORK);
  const config = parseConfig({
    gateway: { host: "127.0.0.1", port: 0, headPollInterval: "100ms", upstreamTimeout: "5s", ...gateway },
    networks: [
      {
        name: NETWORK,
        chainId: CHAIN_ID,
        blockTime: "1s",
        ...networkOptions,
        reservedPeers: nodes.filter((n) => n.role === "full").map((n) => ({ name: n.name, http: n.httpUrl })),
        gateway: { default: true, ...network },
      },
    ],
  });
  const source = new StaticUpstreamSource(
    nodes
      .filter((n) => n.role === "light")
      .map((n) =>
        upstream({ name: n.name, network: NETWORK, httpUrl: n.httpUrl, wsUrl: n.wsUrl, routed: true }),
      ),
  );
  const registry = new Registry();
  const started = await startGateway({ config, source, logger: silentLogger(), registry });
  return { gateway: started, source, registry, wsUrl: `${started.url.replace("http", "ws")}/ws` };
}

/**
 * Waits until the gateway serves the devnet's head. That head is the devnet's log, which its nodes mine after it: on
 * a loaded machine they run some blocks behind it, so the wait goes on while the nodes (up to the head) or the served
 * head still move, and gives up when neither has for 15 s.
 */
export async function waitForServedHead(gateway: Gateway, devnet: Devnet): Promise<number> {
  const head = devnet.head(NETWORK).number;
  const lowestNode = () =>
    Math.min(...devnet.status().nodes.map((n) => (n.network === NETWORK ? (n.head?.number ?? -1) : head)));
  await waitForProgress(
    () => (gateway.servedHead(NETWORK) ?? -1) >= head,
    () => (gateway.servedHead(NETWORK) ?? -1) + Math.min(lowestNode(), head),
    { what: `served head ${head}` },
  );
  return gateway.servedHead(NETWORK)!;
}

export async function post(
  url: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: Json }> {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined };
}

/** A raw JSON-RPC WebSocket client that records every message. */
export async function rawWs(url: string): Promise<{
  socket: WebSocket;
  messages: Json[];
  call: (method: string, params?: unknown[]) => Promise<Json>;
  close: () => void;
}> {
  const socket = new WebSocket(url);
  const messages: Json[] = [];
  socket.on("message", (data) => messages.push(JSON.parse(String(data))));
  await new Promise((resolve, reject) => {
    socket.once("open", resolve);
    socket.once("error", reject);
  });
  let nextId = 1;
  return {
    socket,
    messages,
    async call(method, params = []) {
      const id = nextId++;
      socket.send(JSON.stringify({ jsonrpc: "2.0", id, method, params }));
      return waitFor(() => messages.find((m) => m.id === id), { what: `answer to ${method}` });
    },
    close: () => socket.close(),
  };
}

/**
 * Writes a config for `lightfleet gateway` serving the network "devnet" (chain 31337) at `/`, JSON logs, everything
 * on 127.0.0.1, head polling every 100 ms; `network` is the network's `gateway:` section (its upstreams or Service).
 */
export function writeGatewayConfig(
  file: string,
  options: {
    peer: string;
    network: Record<string, unknown>;
    workers?: number;
    gateway?: Record<string, unknown>;
    /** The network's block time (the preset's when absent). */
    blockTime?: string;
  },
): string {
  const gateway = {
    host: "127.0.0.1",
    headPollInterval: "100ms",
    ...(options.workers ? { workers: options.workers } : {}),
    ...options.gateway,
  };
  // YAML takes JSON as flow mappings.
  writeFileSync(
    file,
    [
      "log: { format: json }",
      "admin: { host: 127.0.0.1 }",
      `gateway: ${JSON.stringify(gateway)}`,
      "networks:",
      "  - name: devnet",
      "    chainId: 31337",
      ...(options.blockTime ? [`    blockTime: ${options.blockTime}`] : []),
      `    reservedPeers: [{ name: peer, http: ${JSON.stringify(options.peer)} }]`,
      `    gateway: ${JSON.stringify({ default: true, ...options.network })}`,
    ].join("\n"),
  );
  return file;
}

/** One anvil node for a `lightfleet gateway` process to front: no mining of its own, three blocks mined. */
export async function startUpstreamNode(): Promise<AnvilNode> {
  const node = await startAnvil({ name: "upstream", chainId: 31_337, noMining: true });
  await new HttpRpcClient(node.httpUrl, 10_000).call("anvil_mine", ["0x3"]);
  return node;
}
