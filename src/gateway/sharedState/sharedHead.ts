import type { SharedStore } from "./sharedStore.js";

/**
 * Raises a network's shared high-water mark (KEYS[1]) to ARGV[1] if higher and answers the mark: one round trip both
 * records this replica's head and reads the highest any replica served. Kept ARGV[2] ms after the last raise, so a
 * chain started again from genesis (a devnet) is not held at its old height for ever.
 */
const RAISE = `local mark = tonumber(redis.call('GET', KEYS[1]) or '-1')
local head = tonumber(ARGV[1])
if head > mark then mark = head; redis.call('SET', KEYS[1], ARGV[1]) end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return mark`;

declare module "ioredis" {
  interface RedisCommander {
    lightfleetRaiseHead(key: string, head: number, ttlMs: number): Promise<number>;
  }
}

const defined = new WeakSet<SharedStore>();

/** The mark outlives the last raise by this long. */
const MARK_TTL_MS = 600_000;

export interface SharedHeadOptions {
  store: SharedStore;
  network: string;
  /**
   * Waits until this replica's own served head reaches `target`, at most a bounded time; the head then (maybe still
   * below the target).
   */
  waitForHead: (target: number) => Promise<number | undefined>;
}

/**
 * The served head of a network over all replicas: never lower than any replica has answered. Each eth_blockNumber
 * records this replica's head in Redis and reads the mark in the same script before it is answered, so a head one
 * replica answered is in Redis before its client can ask another. Reads are coalesced: calls arriving while a round
 * trip is under way share the next one (begun after they came, so it sees every head answered before them). A replica
 * behind the mark waits briefly for its own nodes, then answers the mark anyway: the number never goes back. While
 * Redis does not answer, each replica answers from its own head and the last mark it read.
 */
export class SharedHead {
  private known = -1;
  private running: Promise<number> | undefined;
  private queued: { local: number; promise: Promise<number> } | undefined;

  constructor(private readonly options: SharedHeadOptions) {
    if (!defined.has(options.store)) {
      defined.add(options.store);
      options.store.redis.defineCommand("lightfleetRaiseHead", { numberOfKeys: 1, lua: RAISE });
    }
  }

  /** The head to answer eth_blockNumber with, given this replica's own served head. */
  async blockNumber(local: number): Promise<number> {
    const mark = await this.mark(local);
    if (mark <= local) return local;
    const caughtUp = (await this.options.waitForHead(mark).catch(() => undefined)) ?? local;
    return Math.max(caughtUp, mark);
  }

  private mark(local: number): Promise<number> {
    if (!this.running) return this.raise(local);
    if (this.queued) {
      this.queued.local = Math.max(this.queued.local, local);
      return this.queued.promise;
    }
    const queued: { local: number; promise: Promise<number> } = { local, promise: Promise.resolve(local) };
    const next = (): Promise<number> => this.next(queued.local);
    queued.promise = this.running.then(next, next);
    this.queued = queued;
    return queued.promise;
  }

  private next(local: number): Promise<number> {
    this.queued = undefined;
    return this.raise(local);
  }

  private raise(local: number): Promise<number> {
    const { store, network } = this.options;
    const running = store
      .run("head", (redis) => redis.lightfleetRaiseHead(`head:${network}`, local, MARK_TTL_MS))
      .then(
        (mark) => {
          this.known = Math.max(this.known, Number(mark));
          return Math.max(this.known, local);
        },
        () => Math.max(this.known, local),
      )
      .finally(() => {
        if (this.running === running) this.running = undefined;
      });
    this.running = running;
    return running;
  }
}
