import type { NodeObservation } from "../health/types.js";
import type { BlockRef } from "../chain/blockRef.js";
import type { ProbeMetrics } from "../metrics/probeMetrics.js";
import { parseBlockRef, parseQuantity, toQuantity } from "../rpc/blocks.js";
import type { HttpRpcClient } from "../rpc/httpRpcClient.js";
import { errorMessage, probeErrorReason } from "./probeError.js";

/** What one probe learns of a light node; the controller adds what the fleet knows (start time, restarts). */
export type NodeProbe = Pick<
  NodeObservation,
  "reachable" | "error" | "chainId" | "head" | "syncing" | "check"
>;

export interface ProbeNodeOptions {
  /** Height whose hash the engine wants compared with the peers' (divergence check). */
  checkHeight?: number;
  timeoutMs: number;
  network: string;
  metrics?: ProbeMetrics;
}

/**
 * Probes one node in a single batched round trip: chain id, latest block, sync status and, when asked, the block at
 * the settled check height. A node that cannot name its latest block is unreachable for routing purposes.
 */
export async function probeNode(client: HttpRpcClient, options: ProbeNodeOptions): Promise<NodeProbe> {
  const calls = [
    { method: "eth_chainId" },
    { method: "eth_getBlockByNumber", params: ["latest", false] },
    { method: "eth_syncing" },
  ];
  if (options.checkHeight !== undefined && options.checkHeight >= 0) {
    calls.push({ method: "eth_getBlockByNumber", params: [toQuantity(options.checkHeight), false] });
  }
  const started = performance.now();
  let results: unknown[];
  try {
    results = await client.batch(calls, options.timeoutMs);
  } catch (error) {
    options.metrics?.errors.inc({
      network: options.network,
      target: "node",
      reason: probeErrorReason(error),
    });
    return { reachable: false, error: errorMessage(error) };
  } finally {
    options.metrics?.duration.observe(
      { network: options.network, target: "node" },
      (performance.now() - started) / 1000,
    );
  }
  const [chainIdResult, latestResult, syncingResult, checkResult] = results;
  if (latestResult instanceof Error) {
    options.metrics?.errors.inc({
      network: options.network,
      target: "node",
      reason: probeErrorReason(latestResult),
    });
    return { reachable: false, error: `eth_getBlockByNumber(latest): ${latestResult.message}` };
  }
  const head: BlockRef | undefined = parseBlockRef(latestResult);
  if (!head) {
    options.metrics?.errors.inc({ network: options.network, target: "node", reason: "malformed" });
    return { reachable: false, error: "eth_getBlockByNumber(latest) returned no usable block" };
  }
  const probe: NodeProbe = { reachable: true, head };
  const chainId = chainIdResult instanceof Error ? undefined : parseQuantity(chainIdResult);
  if (chainId !== undefined) probe.chainId = chainId;
  // eth_syncing answers false, or an object describing the sync in progress.
  if (!(syncingResult instanceof Error)) probe.syncing = syncingResult !== false && syncingResult !== null;
  if (options.checkHeight !== undefined && checkResult !== undefined && !(checkResult instanceof Error)) {
    probe.check = { number: options.checkHeight, hash: parseBlockRef(checkResult)?.hash ?? null };
  }
  return probe;
}
