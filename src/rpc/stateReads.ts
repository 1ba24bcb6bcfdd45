/**
 * The methods a light node answers from state it may first have to fetch from its peers, so they take from
 * milliseconds to seconds at random: the devnet's `slow` fault delays these, and the gateway learns their latency
 * apart from other calls.
 */
export const STATE_READ_METHODS: ReadonlySet<string> = new Set([
  "eth_call",
  "eth_estimateGas",
  "eth_getBalance",
  "eth_getCode",
  "eth_getStorageAt",
  "eth_getTransactionCount",
  "eth_getProof",
  "eth_createAccessList",
]);
