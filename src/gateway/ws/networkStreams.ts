import type { Logger } from "../../log/logger.js";
import type { JsonRpcRequest, JsonRpcResponse } from "../../rpc/jsonRpc.js";
import type { FeedBlock, HeadFeed } from "./headFeed.js";
import type { Log } from "./logFilter.js";

export interface StreamListener {
  /** A new canonical block, in order. */
  onBlock(block: FeedBlock, logs: () => Promise<Log[]>): void;
  /** A block replaced by a reorg, with the logs it had announced (called in order with onBlock). */
  onRemoved(block: FeedBlock, logs: Promise<Log[]>): void;
}

/** Calls of the gateway's own (the logs of a block), routed like a client's. */
export interface OwnCalls {
  fetch(request: JsonRpcRequest): Promise<JsonRpcResponse>;
}

const LOG_CACHE_BLOCKS = 128;

/**
 * The shared streams of one network behind every client subscription: the head feed, and the logs of each block,
 * fetched once per block (by block hash, so a reorg can never mix branches) however many subscriptions want them.
 */
export class NetworkStreams {
  private readonly listeners = new Set<StreamListener>();
  private readonly logsByHash = new Map<string, Promise<Log[]>>();

  constructor(
    private readonly feed: HeadFeed,
    private readonly calls: OwnCalls,
    private readonly logger: Logger,
    /**
     * The lowest head a new newHeads subscription may be sent (with shared state: the head over every replica, so a
     * client that reconnects to a replica whose nodes are behind is never sent a head lower than one it had).
     */
    private readonly headFloor: () => number | Promise<number> | undefined = () => undefined,
  ) {
    feed.on("block", (block: FeedBlock) => {
      // One function per block, not one per listener: thousands of connections get the same.
      const logs = () => this.logsOf(block);
      for (const listener of this.listeners) listener.onBlock(block, logs);
    });
    feed.on("removed", (block: FeedBlock) => {
      const logs = this.logsByHash.get(block.hash) ?? Promise.resolve([]);
      for (const listener of this.listeners) listener.onRemoved(block, logs);
    });
  }

  add(listener: StreamListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Removes a listener (for listeners that keep no function to remove themselves, such as each connection). */
  remove(listener: StreamListener): void {
    this.listeners.delete(listener);
  }

  latest(): FeedBlock | undefined {
    return this.feed.latest();
  }

  /** Where a newHeads subscription made now starts: heads below it are not sent to it. */
  newHeadsFloor(): number | Promise<number> | undefined {
    return this.headFloor();
  }

  private logsOf(block: FeedBlock): Promise<Log[]> {
    let logs = this.logsByHash.get(block.hash);
    if (!logs) {
      logs = this.calls
        .fetch({ jsonrpc: "2.0", id: 1, method: "eth_getLogs", params: [{ blockHash: block.hash }] })
        .then((response) =>
          "result" in response && Array.isArray(response.result) ? (response.result as Log[]) : [],
        )
        .catch((error: unknown) => {
          this.logger.warn(
            { err: error, block: block.number },
            "gateway: could not fetch the logs of a block",
          );
          return [];
        });
      this.logsByHash.set(block.hash, logs);
      if (this.logsByHash.size > LOG_CACHE_BLOCKS)
        this.logsByHash.delete(this.logsByHash.keys().next().value!);
    }
    return logs;
  }
}
