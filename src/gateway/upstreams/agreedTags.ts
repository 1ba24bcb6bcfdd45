import type { BlockRef } from "../../chain/blockRef.js";
import type { Logger } from "../../log/logger.js";
import { forward } from "./forward.js";
import { HEAD_QUORUM } from "./agreedHead.js";

/** The block tags a node resolves from its consensus client's view, not from its head. */
export type FinalityTag = "safe" | "finalized";

/**
 * The block of one tag the sources agree on: the highest that min(quorum, sources asked) of them have reached (each
 * source reporting its own safe or finalized block). Every block at or below a finalized block is finalized, so the
 * answer is one that many sources call finalized; undefined when too few report one (none yet, or not reachable).
 */
export function agreeOnTag(
  reports: ReadonlyArray<BlockRef | undefined>,
  quorum = HEAD_QUORUM,
): BlockRef | undefined {
  const need = Math.min(quorum, reports.length);
  const known = reports.filter((r): r is BlockRef => r !== undefined).sort((a, b) => b.number - a.number);
  return need > 0 ? known[need - 1] : undefined;
}

export interface TagSource {
  name: string;
  httpUrl: string;
}

export interface AgreedTagsOptions {
  /** Whom to ask: the network's reserved peers when usable, else the nodes whose heads count. */
  sources: () => TagSource[];
  timeoutMs: number;
  logger: Logger;
  quorum?: number;
  /**
   * The least time between the starts of two rounds (0: a round at every head). Heads that come sooner are answered
   * by one round when it has passed, so a fast chain costs the sources 2 calls each per interval, not per head.
   */
  minIntervalMs?: number;
  clock?: () => number;
}

/** How long before the next round may start: none before the first, then `minIntervalMs` after the last began. */
export function tagRoundDelay(lastStartedAt: number | undefined, now: number, minIntervalMs: number): number {
  return lastStartedAt === undefined ? 0 : Math.max(0, lastStartedAt + minIntervalMs - now);
}

/**
 * Follows the safe and finalized blocks the sources agree on: asked again after new agreed heads (they move only with
 * the chain), one round at a time and at most one round per `minIntervalMs`; heads arriving during a round or within
 * the interval ask for one more round, run as soon as both allow. The finalized block never goes back; a round
 * without agreement (sources unreachable) keeps what was known.
 */
export class AgreedTags {
  private readonly agreed: Partial<Record<FinalityTag, BlockRef>> = {};
  private readonly clock: () => number;
  private running = false;
  private wanted = false;
  private closed = false;
  private lastStartedAt: number | undefined;
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly options: AgreedTagsOptions) {
    this.clock = options.clock ?? Date.now;
  }

  finalized(): BlockRef | undefined {
    return this.agreed.finalized;
  }

  safe(): BlockRef | undefined {
    return this.agreed.safe;
  }

  /**
   * Asks the sources again (after a new head). The call that starts a round resolves when it, and the one more asked
   * for meanwhile, are done (unless the interval defers that one); a call during a round or within the interval only
   * asks for that one more and resolves at once.
   */
  async refresh(): Promise<void> {
    this.wanted = true;
    if (this.running || this.closed) return;
    this.running = true;
    try {
      while (this.wanted && !this.closed) {
        const delay = tagRoundDelay(this.lastStartedAt, this.clock(), this.options.minIntervalMs ?? 0);
        if (delay > 0) {
          this.retryAfter(delay);
          return;
        }
        this.wanted = false;
        this.lastStartedAt = this.clock();
        await this.round();
      }
    } finally {
      this.running = false;
    }
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
  }

  /** One timer for the deferred round, however many heads asked for it. */
  private retryAfter(delayMs: number): void {
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.refresh();
    }, delayMs);
    this.timer.unref();
  }

  private async round(): Promise<void> {
    const sources = this.options.sources();
    if (sources.length === 0) return;
    const [safe, finalized] = await Promise.all(
      (["safe", "finalized"] as const).map((tag) =>
        Promise.all(sources.map((source) => this.ask(source, tag))),
      ),
    );
    if (this.closed) return;
    const quorum = this.options.quorum ?? HEAD_QUORUM;
    const agreedSafe = agreeOnTag(safe!, quorum);
    if (agreedSafe) this.agreed.safe = agreedSafe;
    const agreedFinalized = agreeOnTag(finalized!, quorum);
    if (agreedFinalized && agreedFinalized.number >= (this.agreed.finalized?.number ?? -1))
      this.agreed.finalized = agreedFinalized;
  }

  /** One source's block for a tag; undefined when it has none or does not answer. */
  private async ask(source: TagSource, tag: FinalityTag): Promise<BlockRef | undefined> {
    try {
      const answer = await forward(
        source.httpUrl,
        { jsonrpc: "2.0", id: 1, method: "eth_getBlockByNumber", params: [tag, false] },
        this.options.timeoutMs,
      );
      if (!("result" in answer) || !answer.result || typeof answer.result !== "object") return undefined;
      const block = answer.result as { number?: unknown; hash?: unknown; timestamp?: unknown };
      if (typeof block.number !== "string" || typeof block.hash !== "string") return undefined;
      return {
        number: Number.parseInt(block.number, 16),
        hash: block.hash.toLowerCase(),
        timestamp: typeof block.timestamp === "string" ? Number.parseInt(block.timestamp, 16) : 0,
      };
    } catch (error) {
      this.options.logger.debug(
        { err: (error as Error).message, source: source.name, tag },
        "gateway: could not read a block tag",
      );
      return undefined;
    }
  }
}
