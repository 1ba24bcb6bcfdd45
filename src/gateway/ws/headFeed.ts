import { EventEmitter } from "node:events";
import type { BlockRef } from "../../chain/blockRef.js";
import type { Logger } from "../../log/logger.js";
import { parseBlockRef, toQuantity } from "../../rpc/blocks.js";
import { HttpRpcClient } from "../../rpc/httpRpcClient.js";
import type { NetworkUpstreams } from "../upstreams/networkUpstreams.js";
import { HeadsNotification } from "./headsNotification.js";

/** Blocks remembered for reorg detection, and the deepest reorg or gap the feed repairs. */
const DEPTH = 128;

export interface FeedBlock {
  number: number;
  hash: string;
  /** The header as newHeads sends it. */
  header: Record<string, unknown>;
  /** The header serialized once, shared by every subscriber's notification. */
  headerJson: string;
  /** The newHeads notification, encoded once for every subscriber. */
  notification: HeadsNotification;
}

/** Fields of eth_getBlockByNumber(n, false) that are not part of a newHeads header. */
const NOT_HEADER = ["transactions", "uncles", "withdrawals", "size", "totalDifficulty"];

/**
 * One newHeads stream per network, fanned out to every client subscription. It follows whichever routed node reports
 * a higher head, so losing a node changes nothing for clients: every height is announced once and in order (gaps
 * back-filled from the node that reported the new head), and after a reorg the new branch is announced from the
 * fork point, with `removed` events for the blocks it replaced.
 *
 * Events: `block` (FeedBlock), `removed` (FeedBlock).
 */
export class HeadFeed extends EventEmitter {
  private readonly emitted: FeedBlock[] = [];
  private queue: Promise<void> = Promise.resolve();
  private readonly onHead = (upstream: string, head: BlockRef, header: unknown) => {
    this.queue = this.queue
      .then(() => this.advance(upstream, head, header))
      .catch((error: unknown) => {
        this.options.logger.debug({ err: error, upstream }, "head feed: could not follow a new head");
      });
  };

  constructor(
    private readonly options: {
      upstreams: NetworkUpstreams;
      timeoutMs: number;
      logger: Logger;
      /**
       * Runs before blocks up to a height are announced, and is waited for (with shared state: the height recorded
       * as the shared head first, so a client that got it can ask no replica for a lower one); undefined: nothing to
       * wait for.
       */
      beforeAnnounce?: (height: number) => Promise<unknown> | undefined;
    },
  ) {
    super();
    options.upstreams.on("head", this.onHead);
  }

  latest(): FeedBlock | undefined {
    return this.emitted.at(-1);
  }

  close(): void {
    this.options.upstreams.off("head", this.onHead);
    this.removeAllListeners();
  }

  private async advance(upstream: string, head: BlockRef, header: unknown): Promise<void> {
    const last = this.emitted.at(-1);
    // Only a higher head moves the feed (the longest chain wins; a competing block at the same height waits).
    if (last && head.number <= last.number) return;
    // The usual case, the child of the last block: announced from the header the node sent, without asking it again.
    const next = last && head.number === last.number + 1 ? feedBlock(header) : undefined;
    if (
      next &&
      next.number === head.number &&
      next.hash === head.hash &&
      next.header.parentHash === last!.hash
    ) {
      await this.options.beforeAnnounce?.(next.number);
      this.push(next);
      return;
    }
    const url = this.options.upstreams.url(upstream);
    if (!url) return;
    const client = new HttpRpcClient(url, this.options.timeoutMs);
    const from = last ? Math.max(last.number + 1, head.number - DEPTH + 1) : head.number;
    let blocks = await this.fetch(client, from, head.number);
    // The node moved on to another block at that height since it agreed: wait for the next agreed head.
    if (!blocks || blocks.at(-1)!.hash !== head.hash) return;
    await this.options.beforeAnnounce?.(head.number);
    if (last && blocks[0]!.number === last.number + 1 && blocks[0]!.header.parentHash !== last.hash) {
      const ancestor = await this.findAncestor(client);
      if (ancestor === undefined) return;
      const replaced = this.emitted.filter((b) => b.number > ancestor);
      const branch = await this.fetch(client, ancestor + 1, head.number);
      if (!branch) return;
      this.emitted.splice(this.emitted.length - replaced.length);
      for (const block of replaced.reverse()) this.emit("removed", block);
      blocks = branch;
    }
    for (const block of blocks) this.push(block);
  }

  private push(block: FeedBlock): void {
    this.emitted.push(block);
    if (this.emitted.length > DEPTH) this.emitted.shift();
    this.emit("block", block);
  }

  /** The highest emitted height whose hash the node still has: the fork point of a reorg. */
  private async findAncestor(client: HttpRpcClient): Promise<number | undefined> {
    const heights = this.emitted.map((b) => b.number);
    const results = await client.batch(
      heights.map((h) => ({ method: "eth_getBlockByNumber", params: [toQuantity(h), false] })),
    );
    for (let i = heights.length - 1; i >= 0; i--) {
      const ref = parseBlockRef(results[i]);
      if (ref && ref.hash === this.emitted[i]!.hash) return ref.number;
    }
    return undefined;
  }

  /** Headers from..to from one node, checked to form one chain; undefined if the node does not have them all. */
  private async fetch(client: HttpRpcClient, from: number, to: number): Promise<FeedBlock[] | undefined> {
    const heights = Array.from({ length: to - from + 1 }, (_, i) => from + i);
    const results = await client.batch(
      heights.map((h) => ({ method: "eth_getBlockByNumber", params: [toQuantity(h), false] })),
    );
    const blocks: FeedBlock[] = [];
    for (const result of results) {
      const block = feedBlock(result);
      if (!block) return undefined;
      const previous = blocks.at(-1);
      if (previous && block.header.parentHash !== previous.hash) return undefined;
      blocks.push(block);
    }
    return blocks.length > 0 ? blocks : undefined;
  }
}

/** A block as newHeads announces it, from a node's block or header; undefined if it is not one. */
function feedBlock(value: unknown): FeedBlock | undefined {
  const ref = parseBlockRef(value);
  if (!ref) return undefined;
  const header = { ...(value as Record<string, unknown>) };
  for (const field of NOT_HEADER) delete header[field];
  const headerJson = JSON.stringify(header);
  return {
    number: ref.number,
    hash: ref.hash,
    header,
    headerJson,
    notification: new HeadsNotification(headerJson),
  };
}
