import { blockParamIndex } from "./blockParams.js";

/**
 * The served head over every replica (shared state in Redis), as the call path sees it: the head a call resolves
 * `latest` and its block window against, so a client whose calls land on different replicas never sees it go back.
 * Synchronous while the replica is at the shared head (the usual case, no round trip).
 */
export interface SharedServedHead {
  head(local: number): number | Promise<number>;
}

/**
 * Whether a call's answer depends on the head: eth_blockNumber, eth_getLogs (its window) and every method with a block
 * parameter (`latest`, or omitted, is the head; a height is judged against it). Other calls keep the replica's own
 * head, which only steers them to a node that has it.
 */
export function resolvesAgainstHead(method: string): boolean {
  return method === "eth_blockNumber" || method === "eth_getLogs" || blockParamIndex(method) !== undefined;
}
