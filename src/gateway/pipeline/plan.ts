import type { GatewayOutcome } from "../../metrics/gatewayMetrics.js";
import type { JsonRpcRequest, JsonRpcResponse } from "../../rpc/jsonRpc.js";
import type { BlockTags } from "../rpc/blockParams.js";

/**
 * What to do with one call, decided without I/O by the method's planner (see methodTable.ts) and carried out by the
 * executor (callExecutor.ts):
 *
 * - `answer`: the gateway answers itself (its own answers, refusals, a block above the head);
 * - `filters`: the gateway's filters answer it (per client address);
 * - `forward`: to one node that has `minBlock` (a node whose chain holds `blockHash` first), hedged and retried;
 * - `broadcast`: a signed transaction, to every node that may serve, after the per-sender limit.
 */
export type Plan =
  | {
      kind: "answer";
      response: JsonRpcResponse;
      outcome: GatewayOutcome;
      /** eth_getLogs refused by the window rule: the reason, counted in the metrics. */
      getLogsRefused?: string;
    }
  | { kind: "filters" }
  | {
      kind: "forward";
      request: JsonRpcRequest;
      minBlock: number | undefined;
      /**
       * The call names `minBlock` (by number, a pinned tag, a hash or a log range): only a node that has it is asked,
       * and the call waits a little for one. Otherwise (methods without a block) a node below is ranked last.
       */
      requireBlock?: boolean;
      /** When no node gets the block within the wait: answer null, as a node at that head does for such a method. */
      nullIfMissing?: boolean;
      blockHash?: string;
    }
  | {
      kind: "broadcast";
      request: JsonRpcRequest;
      /** The transaction's hash: what the client gets once a node took it. */
      hash: string;
      /** The sending account, when the per-sender limit applies. */
      sender?: string;
    };

export type ForwardPlan = Extract<Plan, { kind: "forward" }>;

/** What a planner may read of the network at the moment of the call: a snapshot, no I/O. */
export interface PlanContext {
  /**
   * The served head; undefined before the first agreed head. With shared state, for calls that name the head, the
   * head served over every replica (see sharedServedHead.ts), so a client moving between replicas never sees it go back.
   */
  served: number | undefined;
  /** The network's chain id as a quantity. */
  chainId: string;
  /** The agreed safe and finalized heights, never above the served head. */
  blockTags(served: number): Readonly<BlockTags>;
  /** The height of a recent block hash some node's chain holds; undefined for a hash no node has seen recently. */
  heightOfHash(hash: string): number | undefined;
  /** eth_getLogs: the widest block range served. */
  getLogsMaxRange: number;
  /** eth_getLogs: the lowest head served within the network's block time (the head the client could have seen). */
  lowestRecentHead(served: number): number;
  /** The gateway serves the filter methods itself. */
  filters: boolean;
  /** eth_sendRawTransaction is held to a per-sender limit: the sender is recovered from the signature. */
  limitsSenders: boolean;
}

/** geth's answer for state at a block it does not have; clients know it. */
export const HEADER_NOT_FOUND = -32000;

/** One method family's decision for a call. */
export type Planner = (request: JsonRpcRequest, context: PlanContext) => Plan;

export const answered = (
  response: JsonRpcResponse,
  outcome: GatewayOutcome = "error" in response ? "rpc_error" : "ok",
): Plan => ({ kind: "answer", response, outcome });

export const hasArguments = (request: JsonRpcRequest): boolean =>
  Array.isArray(request.params) && request.params.length > 0;
