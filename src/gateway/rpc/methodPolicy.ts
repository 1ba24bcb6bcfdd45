/**
 * Which methods the public endpoints serve. Only the public namespaces are forwarded; node administration
 * (admin_, debug_, personal_, miner_, txpool_, engine_) and dev-node controls (anvil_, evm_, hardhat_) never reach a
 * node from the internet.
 */
export const PUBLIC_NAMESPACES = ["eth", "net", "web3"] as const;

/** Methods of public namespaces that make no sense through a shared gateway. */
const REFUSED_METHODS = new Set([
  "eth_sign",
  "eth_signTransaction",
  "eth_sendTransaction",
  "eth_coinbase",
  "eth_mining",
  "eth_hashrate",
  "eth_submitWork",
  "eth_submitHashrate",
  "eth_getWork",
]);

/** Served by the gateway itself, over WebSocket only. */
export const SUBSCRIPTION_METHODS = new Set(["eth_subscribe", "eth_unsubscribe"]);

export type PolicyVerdict = { allowed: true } | { allowed: false; message: string };

export function checkMethod(method: string, extraAllowed: readonly string[] = []): PolicyVerdict {
  if (extraAllowed.includes(method)) return { allowed: true };
  const namespace = method.split("_", 1)[0] ?? "";
  if (!(PUBLIC_NAMESPACES as readonly string[]).includes(namespace) || !method.includes("_"))
    return { allowed: false, message: `the method ${method} does not exist/is not available` };
  if (REFUSED_METHODS.has(method))
    return { allowed: false, message: `the method ${method} is not available on this endpoint` };
  return { allowed: true };
}

/** Reads that give the same answer wherever they run, so a failed attempt may be retried on another node. */
export function isIdempotent(method: string): boolean {
  return method !== "eth_sendRawTransaction";
}

/** The method label of metrics: known public methods by name, everything else "other", so series stay bounded. */
const KNOWN_METHODS = new Set([
  "eth_blockNumber",
  "eth_call",
  "eth_chainId",
  "eth_estimateGas",
  "eth_feeHistory",
  "eth_gasPrice",
  "eth_getBalance",
  "eth_getBlockByHash",
  "eth_getBlockByNumber",
  "eth_getBlockReceipts",
  "eth_getCode",
  "eth_getLogs",
  "eth_getProof",
  "eth_getStorageAt",
  "eth_getTransactionByHash",
  "eth_getTransactionCount",
  "eth_getTransactionReceipt",
  "eth_maxPriorityFeePerGas",
  "eth_sendRawTransaction",
  "eth_subscribe",
  "eth_unsubscribe",
  "eth_syncing",
  "eth_createAccessList",
  "eth_getBlockTransactionCountByNumber",
  "eth_getTransactionByBlockNumberAndIndex",
  "net_version",
  "net_listening",
  "net_peerCount",
  "web3_clientVersion",
]);

export function methodLabel(method: string): string {
  return KNOWN_METHODS.has(method) ? method : "other";
}

/** A standard public method, answered alike by every node software. */
export function isKnownMethod(method: string): boolean {
  return KNOWN_METHODS.has(method);
}
