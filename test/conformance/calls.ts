/**
 * The conformance table: calls sent both to a node directly and to the gateway in front of it, whose answers must be
 * the same bytes (after the normalising in conformance.test.ts) unless intendedDifferences.ts lists the call. It
 * covers every method the gateway answers itself or rewrites, each error path it has, batches and WebSocket.
 */

/** What a table row needs to know about the chain it runs on (made by the test before the calls). */
export interface ChainFacts {
  head: number;
  /** The node's own finalized and safe blocks (the gateway's agreed ones must be these: one node is the peer). */
  finalized: number;
  safe: number;
  account: string;
  emitter: string;
  /** A block with a log, and the transaction that emitted it. */
  logBlockHash: string;
  logTransaction: string;
}

export type Transport = "http" | "ws";

/**
 * The subscriptions compared after the table (a block with a log is added): each notification's subscription id is
 * replaced by the name here on both sides, the only normalising they get.
 */
export const NOTIFICATIONS = {
  "ws newHeads notification": "SUBSCRIPTION-newHeads",
  "ws logs notification": "SUBSCRIPTION-logs",
} as const;

export interface ConformanceCall {
  /** Unique; intendedDifferences.ts names calls by it. */
  name: string;
  transport: Transport;
  /** Sent as this exact text (a string), or as the JSON of the value. */
  body: unknown;
}

const hex = (n: number) => `0x${n.toString(16)}`;

/**
 * Init code that reverts with Error("a > b"): run by eth_call as a contract creation. geth writes the reason in its
 * message as `a \u003e b` (Go's JSON escaping), anvil as `a > b`: the gateway must pass either on as it came.
 */
const REVERTS_WITH_REASON =
  "0x6064600c600039" +
  "60646000fd" +
  "08c379a0" +
  "20".padStart(64, "0") +
  "05".padStart(64, "0") +
  "61203e2062".padEnd(64, "0");
const call = (method: string, params?: unknown[], id: unknown = 1) => ({
  jsonrpc: "2.0",
  id,
  method,
  ...(params === undefined ? {} : { params }),
});

export function conformanceCalls(chain: ChainFacts): ConformanceCall[] {
  const { head, account } = chain;
  const http = (name: string, body: unknown): ConformanceCall => ({ name, transport: "http", body });
  const ws = (name: string, body: unknown): ConformanceCall => ({ name, transport: "ws", body });
  return [
    // Answered by the gateway itself.
    http("eth_blockNumber", call("eth_blockNumber", [])),
    http("eth_blockNumber without params", call("eth_blockNumber")),
    http("eth_blockNumber with arguments", call("eth_blockNumber", [1, 2])),
    http("eth_chainId", call("eth_chainId", [])),
    http("eth_chainId with arguments", call("eth_chainId", ["0x1"])),
    http("eth_accounts", call("eth_accounts", [])),
    // Block parameters: latest, safe and finalized are pinned to numbers by the gateway.
    http("eth_getBlockByNumber latest", call("eth_getBlockByNumber", ["latest", false])),
    http("eth_getBlockByNumber finalized", call("eth_getBlockByNumber", ["finalized", false])),
    http("eth_getBlockByNumber safe", call("eth_getBlockByNumber", ["safe", true])),
    http("eth_getBlockByNumber earliest", call("eth_getBlockByNumber", ["earliest", false])),
    http("eth_getBlockByNumber above the head", call("eth_getBlockByNumber", [hex(head + 1000), false])),
    http("eth_getBlockByHash", call("eth_getBlockByHash", [chain.logBlockHash, false])),
    http(
      "eth_getBlockTransactionCountByNumber finalized",
      call("eth_getBlockTransactionCountByNumber", ["finalized"]),
    ),
    http("eth_getBalance latest", call("eth_getBalance", [account, "latest"])),
    http("eth_getBalance finalized", call("eth_getBalance", [account, "finalized"])),
    http("eth_getBalance {blockNumber: safe}", call("eth_getBalance", [account, { blockNumber: "safe" }])),
    http("eth_getBalance {blockHash}", call("eth_getBalance", [account, { blockHash: chain.logBlockHash }])),
    http("eth_getBalance above the head", call("eth_getBalance", [account, hex(head + 1000)])),
    http("eth_getTransactionCount finalized", call("eth_getTransactionCount", [account, "finalized"])),
    http("eth_getCode", call("eth_getCode", [chain.emitter, "latest"])),
    http("eth_getStorageAt safe", call("eth_getStorageAt", [chain.emitter, "0x0", "safe"])),
    http("eth_getProof finalized", call("eth_getProof", [account, [], "finalized"])),
    http(
      "eth_call at {blockHash, requireCanonical}",
      call("eth_call", [
        { to: chain.emitter, data: "0x" },
        { blockHash: chain.logBlockHash, requireCanonical: true },
      ]),
    ),
    http("eth_getBlockReceipts finalized", call("eth_getBlockReceipts", ["finalized"])),
    http(
      "eth_getTransactionByBlockNumberAndIndex safe",
      call("eth_getTransactionByBlockNumberAndIndex", ["safe", "0x0"]),
    ),
    http("eth_getUncleCountByBlockNumber finalized", call("eth_getUncleCountByBlockNumber", ["finalized"])),
    http("net_version", call("net_version", [])),
    http("web3_clientVersion", call("web3_clientVersion", [])),
    // eth_getLogs: tags resolved by the gateway, window and range rules.
    http("eth_getLogs 0x0 .. finalized", call("eth_getLogs", [{ fromBlock: "0x0", toBlock: "finalized" }])),
    http("eth_getLogs finalized .. safe", call("eth_getLogs", [{ fromBlock: "finalized", toBlock: "safe" }])),
    http("eth_getLogs safe .. latest", call("eth_getLogs", [{ fromBlock: "safe", toBlock: "latest" }])),
    http(
      "eth_getLogs earliest .. latest",
      call("eth_getLogs", [{ fromBlock: "earliest", address: chain.emitter }]),
    ),
    http("eth_getLogs pending", call("eth_getLogs", [{ fromBlock: "pending" }])),
    http("eth_getLogs blockHash", call("eth_getLogs", [{ blockHash: chain.logBlockHash }])),
    http(
      "eth_getLogs toBlock past the head",
      call("eth_getLogs", [{ fromBlock: hex(head), toBlock: hex(head + 5) }]),
    ),
    http(
      "eth_getLogs fromBlock after toBlock",
      call("eth_getLogs", [{ fromBlock: hex(5), toBlock: hex(3) }]),
    ),
    http("eth_getLogs without a filter", call("eth_getLogs", [])),
    http(
      "eth_getLogs blockHash with a range",
      call("eth_getLogs", [{ blockHash: chain.logBlockHash, fromBlock: "0x1" }]),
    ),
    // Forwarded as they are.
    http("eth_getTransactionReceipt", call("eth_getTransactionReceipt", [chain.logTransaction])),
    http("eth_getTransactionByHash", call("eth_getTransactionByHash", [chain.logTransaction])),
    http("eth_feeHistory", call("eth_feeHistory", ["0x4", "latest", [25, 75]])),
    http("eth_call failing", call("eth_call", [{ from: account, to: chain.emitter, gas: "0x1" }, "latest"])),
    http(
      "eth_call reverting with a reason",
      call("eth_call", [{ from: account, data: REVERTS_WITH_REASON }, "latest"]),
    ),
    http(
      "eth_estimateGas failing",
      call("eth_estimateGas", [
        { from: account, to: chain.emitter, value: "0xffffffffffffffffffffffffffffffffffff" },
      ]),
    ),
    http("eth_sendRawTransaction not a transaction", call("eth_sendRawTransaction", ["0x00"])),
    // Refused by the gateway's policy.
    http("unknown method", call("foo_bar", [])),
    http(
      "eth_sendTransaction",
      call("eth_sendTransaction", [{ from: "0x000000000000000000000000000000000000dead", to: account }]),
    ),
    http("debug_ namespace", call("debug_traceBlockByNumber", ["latest"])),
    http("eth_subscribe over HTTP", call("eth_subscribe", ["newHeads"])),
    // Filters, served by the gateway.
    http("eth_getFilterChanges of an unknown filter", call("eth_getFilterChanges", ["0x1234"])),
    http("eth_uninstallFilter of an unknown filter", call("eth_uninstallFilter", ["0x1234"])),
    http("eth_newFilter pending", call("eth_newFilter", [{ fromBlock: "pending" }])),
    http("eth_newPendingTransactionFilter", call("eth_newPendingTransactionFilter", [])),
    // JSON-RPC framing.
    http("a notification", { jsonrpc: "2.0", method: "eth_chainId", params: [] }),
    http("a string id", call("eth_chainId", [], "abc")),
    http(
      "a big numeric id",
      '{"jsonrpc":"2.0","id":12345678901234567890,"method":"eth_chainId","params":[]}',
    ),
    http("a null id", call("eth_chainId", [], null)),
    http("not JSON", "{"),
    http("not JSON-RPC 2.0", { jsonrpc: "1.0", id: 1, method: "eth_chainId", params: [] }),
    http("a batch", [
      call("eth_blockNumber", [], 1),
      call("eth_chainId", [], 2),
      call("eth_getBlockByNumber", ["finalized", false], 3),
    ]),
    http("an empty batch", []),
    http("a batch of notifications", [{ jsonrpc: "2.0", method: "eth_chainId", params: [] }]),
    http("a batch with an invalid item", [call("eth_chainId", [], 1), 5]),
    // WebSocket.
    ws("ws eth_blockNumber", call("eth_blockNumber", [])),
    ws("ws eth_getBlockByNumber finalized", call("eth_getBlockByNumber", ["finalized", false])),
    ws("ws eth_getLogs 0x0 .. finalized", call("eth_getLogs", [{ fromBlock: "0x0", toBlock: "finalized" }])),
    ws(
      "ws eth_unsubscribe of an unknown id",
      call("eth_unsubscribe", ["0x5e1f0000000000000000000000000001"]),
    ),
    ws("ws eth_subscribe syncing", call("eth_subscribe", ["syncing"])),
    ws("ws a batch", [call("eth_chainId", [], 1), call("eth_getBalance", [account, "finalized"], 2)]),
  ];
}
