import type { BlockRef } from "../../chain/blockRef.js";
import type { JsonRpcRequest, JsonRpcResponse } from "../../rpc/jsonRpc.js";
import type { Candidate } from "./balancer.js";

/** Where one call's answer goes: one of the two, once. */
export interface ResponseSink {
  answered(response: JsonRpcResponse): void;
  failed(error: unknown): void;
}

/**
 * What the call path asks of one network's nodes (NetworkUpstreams in the gateway; a fake in a test): their state for
 * planning and choosing, and calls to one of them.
 */
export interface Upstreams {
  readonly network: string;
  readonly chainId: number;
  /** The highest agreed head, never going back; undefined before the first. */
  servedHead(): number | undefined;
  safe(): BlockRef | undefined;
  finalized(): BlockRef | undefined;
  /** A recent block hash's height and the nodes whose recent chain holds it; undefined when none has seen it. */
  blockOfHash(hash: string): { number: number; holders: ReadonlySet<string> } | undefined;
  /** The height of a recent block hash that a node serving now (routed; any in panic mode) holds on its chain. */
  servedHeightOfHash(hash: string): number | undefined;
  candidates(): Candidate[];
  /**
   * One call to one node, its answer (or failure: RpcTransportError) to `sink`, never in the turn it was sent; false
   * when the node has left the set, and then `sink` is not called.
   */
  call(name: string, request: JsonRpcRequest, timeoutMs: number, raw: boolean, sink: ResponseSink): boolean;
  /** Counts a call in flight on a node; call the returned function when it is done. */
  acquire(name: string): () => void;
  /** "change": the served head or the set of nodes changed; "nodeHead": a node's own head moved. */
  on(event: "change" | "nodeHead", listener: () => void): unknown;
}
