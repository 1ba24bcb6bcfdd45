/**
 * The peers' configuration files, as pure text from what the bench hands them. Each is configured as close to the
 * gateway as it allows: the same nodes, the head followed every 100 ms, `latest` resolved against that followed head
 * where the peer does it, no response cache unless asked (the gateway keeps none for forwarded calls), metrics off
 * unless the bench reads them.
 */

export interface PeerNode {
  httpUrl: string;
  wsUrl: string;
}

/**
 * proxyd's consensus poller bans a backend whose head has not moved for this long (30 s by default); the bench mines
 * no block during its HTTP runs, which last minutes, so the ban would turn every call into -32011 "no backend is
 * currently healthy to serve traffic". An hour is longer than any run.
 */
export const PROXYD_MAX_UPDATE_THRESHOLD = "1h";

/**
 * proxyd in front of one node. consensus_aware: proxyd follows the backend's head and answers eth_blockNumber from it,
 * rewriting `latest`, which is what the gateway's served head does. One backend, so the peer-count check is skipped.
 * Its poller also needs the node's `safe` and `finalized` blocks above 0 (see `minedForPeers`).
 */
export function proxydConfig(node: PeerNode, port: number, wsPort: number): string {
  return `ws_method_whitelist = ["eth_subscribe", "eth_unsubscribe"]
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
consensus_max_update_threshold = "${PROXYD_MAX_UPDATE_THRESHOLD}"
[rpc_method_mappings]
eth_blockNumber = "main"
eth_chainId = "main"
eth_call = "main"
eth_getBlockByNumber = "main"
eth_getBlockByHash = "main"
`;
}

/**
 * What the eRPC binary at hand accepts. eRPC reads its YAML with unknown keys refused, and its keys changed between
 * versions: `server.httpPort` became `httpPortV4`, and `server.webSocket` exists only in versions that serve
 * WebSockets. Read from the binary itself: a Go binary keeps its structs' field tags as text.
 */
export interface ErpcFeatures {
  httpPortKey: "httpPortV4" | "httpPort";
  webSocket: boolean;
  /** `server.waitBeforeShutdown`/`waitAfterShutdown` (10 s each by default): set to 0 so the bench's stop is quick. */
  shutdownWaits: boolean;
}

export function erpcFeatures(binary: Buffer): ErpcFeatures {
  return {
    httpPortKey: binary.includes('yaml:"httpPortV4') ? "httpPortV4" : "httpPort",
    webSocket: binary.includes('yaml:"webSocket'),
    shutdownWaits: binary.includes('yaml:"waitBeforeShutdown'),
  };
}

export interface ErpcSettings {
  chainId: number;
  port: number;
  upstreams: readonly PeerNode[];
  /** Serve Prometheus metrics on this port (the latency bench counts upstream calls from them); off without it. */
  metricsPort?: number;
  /** A hedge policy on the network: a second upstream after the recent latency quantile, never before minDelay. */
  hedge?: { quantile: number; minDelay: string; maxDelay: string };
  /** An in-memory cache of finalized answers (eRPC's only finality-safe default); none without it. */
  cache?: boolean;
}

/** eRPC's YAML for the binary's `features`. Without `cache`, no database: eRPC keeps no response cache. */
export function erpcConfig(features: ErpcFeatures, settings: ErpcSettings): string {
  const { chainId } = settings;
  const lines = [
    "logLevel: warn",
    "server:",
    "  listenV4: true",
    "  httpHostV4: 127.0.0.1",
    `  ${features.httpPortKey}: ${settings.port}`,
    "  listenV6: false",
  ];
  if (features.shutdownWaits) lines.push("  waitBeforeShutdown: 0s", "  waitAfterShutdown: 0s");
  if (features.webSocket) lines.push("  webSocket:", "    enabled: true");
  if (settings.metricsPort === undefined) lines.push("metrics:", "  enabled: false");
  else
    lines.push(
      "metrics:",
      "  enabled: true",
      "  listenV4: true",
      "  hostV4: 127.0.0.1",
      "  listenV6: false",
      `  port: ${settings.metricsPort}`,
    );
  if (settings.cache)
    lines.push(
      "database:",
      "  evmJsonRpcCache:",
      "    connectors:",
      "      - id: memory",
      "        driver: memory",
      "        memory:",
      "          maxItems: 100000",
      "          maxTotalSize: 1GB",
      "    policies:",
      "      - network: '*'",
      "        method: '*'",
      "        finality: finalized",
      "        connector: memory",
    );
  lines.push("projects:", "  - id: main", "    networks:", "      - architecture: evm", "        evm:");
  lines.push(`          chainId: ${chainId}`);
  if (settings.hedge)
    lines.push(
      "        failsafe:",
      "          hedge:",
      `            quantile: ${settings.hedge.quantile}`,
      `            minDelay: ${settings.hedge.minDelay}`,
      `            maxDelay: ${settings.hedge.maxDelay}`,
      "            maxCount: 1",
    );
  lines.push("    upstreams:");
  settings.upstreams.forEach((node, i) =>
    lines.push(
      `      - id: node-${i}`,
      `        endpoint: ${node.httpUrl}`,
      "        evm:",
      `          chainId: ${chainId}`,
      "          statePollerInterval: 100ms",
    ),
  );
  return `${lines.join("\n")}\n`;
}
