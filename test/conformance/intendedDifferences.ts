import type { Implementation } from "./nodes.js";

/**
 * Where the gateway answers otherwise than the node behind it, on purpose. Every other call of the conformance table
 * (calls.ts) must get the node's bytes. docs/gateway.md's table of intended differences is made from this list
 * (`differencesTable`) and checked against it by test/conformance/docs.test.ts.
 */
export interface IntendedDifference {
  /** The names of the calls (calls.ts) this covers. */
  calls: string[];
  /** The implementations whose answer differs: where anvil and geth disagree, the gateway answers as geth does. */
  on: Implementation[];
  /** What the gateway answers, and why. */
  gateway: string;
}

const BOTH: Implementation[] = ["anvil", "geth"];

export const INTENDED_DIFFERENCES: IntendedDifference[] = [
  {
    calls: ["eth_accounts"],
    on: BOTH,
    gateway: "`[]`: a public endpoint holds no keys, whatever the node has unlocked",
  },
  {
    calls: ["eth_sendTransaction"],
    on: BOTH,
    gateway: '-32601 "not available on this endpoint": it would need the node\'s keys',
  },
  {
    calls: ["eth_getLogs toBlock past the head", "eth_getLogs fromBlock after toBlock"],
    on: BOTH,
    gateway:
      "-32602 naming the heights (the served head, not the node's own); anvil answers `[]`, geth -32602 with its own words",
  },
  {
    calls: ["eth_getLogs without a filter", "eth_getLogs blockHash with a range"],
    on: BOTH,
    gateway:
      '-32602 in the gateway\'s words ("invalid params: eth_getLogs takes one filter object", "invalid params: blockHash excludes fromBlock and toBlock")',
  },
  {
    calls: ["eth_subscribe over HTTP"],
    on: BOTH,
    gateway: '-32601 saying subscriptions are served over `/ws` (geth: "notifications not supported")',
  },
  {
    calls: ["ws eth_subscribe syncing"],
    on: BOTH,
    gateway: "-32602: the gateway serves `newHeads` and `logs` subscriptions only, from its own streams",
  },
  {
    calls: ["eth_newPendingTransactionFilter"],
    on: BOTH,
    gateway: "-32601 with the reason: light nodes have no mempool worth following",
  },
  {
    calls: ["not JSON", "not JSON-RPC 2.0", "an empty batch", "a batch with an invalid item"],
    on: BOTH,
    gateway:
      "the same code with a message naming the rule broken (`parse error: invalid JSON`, `invalid request: empty batch`, ...); anvil refuses a batch with an invalid item whole, the gateway and geth item by item",
  },
  {
    calls: ["eth_blockNumber with arguments", "eth_chainId with arguments"],
    on: ["anvil"],
    gateway: 'geth\'s -32602 "too many arguments, want at most 0"',
  },
  {
    calls: ["eth_getBalance above the head"],
    on: ["anvil"],
    gateway: 'geth\'s -32000 "header not found" for state above the served head',
  },
  {
    calls: ["eth_getLogs pending", "eth_newFilter pending"],
    on: ["anvil"],
    gateway: 'geth\'s -32602 "pending logs are not supported" (anvil answers `[]`, or a filter)',
  },
  {
    calls: ["unknown method", "debug_ namespace"],
    on: ["anvil"],
    gateway: 'geth\'s -32601 "the method … does not exist/is not available" (anvil serves `debug_`)',
  },
  {
    calls: ["a notification", "a batch of notifications"],
    on: ["anvil"],
    gateway: "geth's HTTP 200 with an empty body (anvil: 204)",
  },
  {
    calls: ["a big numeric id"],
    on: ["anvil"],
    gateway: "the answer, with the id as written, as geth does (anvil refuses an id beyond 64 bits)",
  },
  {
    calls: ["ws newHeads notification"],
    on: ["anvil"],
    gateway: "the header, as geth sends it (anvil sends the whole block: transactions, uncles, size)",
  },
  {
    calls: ["ws eth_unsubscribe of an unknown id"],
    on: ["anvil"],
    gateway: 'geth\'s -32000 "subscription not found" (anvil: `false`)',
  },
];

/** The table docs/gateway.md shows between its conformance markers. */
export function differencesTable(): string {
  const rows = INTENDED_DIFFERENCES.map(
    (d) => `| ${d.calls.map((c) => `${c}`).join("; ")} | ${d.on.join(", ")} | ${d.gateway} |`,
  );
  return [
    "| calls (test/conformance/calls.ts) | differs from | the gateway answers |",
    "|---|---|---|",
    ...rows,
  ].join("\n");
}
