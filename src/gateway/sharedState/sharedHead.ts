import type { SharedStore } from "./sharedStore.js";

/**
 * Raises a network's shared high-water mark (KEYS[1]) to ARGV[1] if higher, tells every replica (PUBLISH on ARGV[3],
 * in the same atomic step) and answers the mark: one round trip both records this replica's head and reads the
 * highest any replica served. Kept ARGV[2] ms after the last raise, so a chain started again from genesis (a devnet)
 * is not held at its old height for ever.
 */
const RAISE = `local mark = tonumber(redis.call('GET', KEYS[1]) or '-1')
local head = tonumber(ARGV[1])
if head > mark then
  mark = head
  redis.call('SET', KEYS[1], ARGV[1])
  redis.call('PUBLISH', ARGV[3], ARGV[1])
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return mark`;

declare module "ioredis" {
  interface RedisCommander {
    lightfleetRaiseHead(key: string, head: number, ttlMs: number, channel: string): Promise<number>;
  }
}

const defined = new WeakSet<SharedStore>();

/** The mark outlives the last raise by this long. */
const MARK_TTL_MS = 600_000;
/** A failed read of the mark after (re)subscribing is tried again this often while the subscription lasts. */
const RESYNC_RETRY_MS = 250;

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
 * The served head of a network over all replicas: never lower than any replica has answered.
 *
 * Every replica keeps the mark in memory, kept current by Redis pub/sub: a raise is a script that sets the mark and
 * publishes it in one step, and this replica answers a head of its own only once that script has answered. So before
 * a client can carry a number from one replica to another, the message with it has left Redis for every replica (in
 * the same event-loop turn of Redis as the reply to the raiser), and the client's way there (Redis to the raiser, the
 * raiser to the client, the client through the balancer to the other replica) is longer than the message's (Redis to
 * that replica). Calls therefore read the mark from memory, with no round trip: the only writes are one per new head
 * of a replica's own that exceeds the mark.
 *
 * While the subscription is not in place (starting, Redis reconnecting) the cache may have missed a raise: every call
 * then asks Redis (one round trip, coalesced: calls arriving while one is under way share the next), as without the
 * cache. A replica behind the mark waits briefly for its own nodes, then answers the mark anyway: the number never
 * goes back. While Redis does not answer, each replica answers from its own head and the last mark it read.
 */
export class SharedHead {
  private known = -1;
  /** Subscribed, and the mark read since: `known` follows every raise. */
  private synced = false;
  private running: Promise<number> | undefined;
  private queued: { local: number; promise: Promise<number> } | undefined;
  /** The one wait for this replica's nodes to reach a target, shared by every call behind it. */
  private catching: { target: number; promise: Promise<number | undefined> } | undefined;
  private readonly channel: string;
  private readonly unlisten: () => void;

  constructor(private readonly options: SharedHeadOptions) {
    if (!defined.has(options.store)) {
      defined.add(options.store);
      options.store.redis.defineCommand("lightfleetRaiseHead", { numberOfKeys: 1, lua: RAISE });
    }
    this.channel = options.store.channel(`head:${options.network}`);
    this.unlisten = options.store.listen(this.channel, {
      message: (text) => this.learn(Number(text)),
      subscribed: (up) => (up ? this.resync() : (this.synced = false)),
    });
  }

  /** True while the mark is followed in memory (subscribed, and read since): calls at the mark need no round trip. */
  get following(): boolean {
    return this.synced;
  }

  /**
   * The head to serve, given this replica's own served head: at once (no round trip) while the cached mark is
   * current and this replica is at it; after one raise when this replica's head is above the mark; after a wait for
   * this replica's nodes when it is below.
   */
  head(local: number): number | Promise<number> {
    if (this.synced && local <= this.known)
      return local === this.known ? local : this.catchUp(local, this.known);
    return this.mark(local).then((mark) => (mark <= local ? local : this.catchUp(local, mark)));
  }

  /**
   * The mark as far as this replica knows it (from memory while subscribed, else one round trip), without waiting
   * for its nodes: where a new newHeads subscription starts.
   */
  current(local: number): number | Promise<number> {
    if (this.synced && local <= this.known) return this.known;
    return this.mark(local);
  }

  /** Records a new head of this replica's own in Redis (if above the mark); resolves once recorded, or failed. */
  raise(local: number): Promise<number> | undefined {
    if (this.synced && local <= this.known) return undefined;
    return this.mark(local);
  }

  close(): void {
    this.unlisten();
  }

  private learn(mark: number): void {
    if (Number.isFinite(mark)) this.known = Math.max(this.known, mark);
  }

  /** Subscribed (again): read the mark once, then follow the messages (a raise after the read is among them). */
  private resync(): void {
    const { store, network } = this.options;
    store
      .run("head", (redis) => redis.get(`head:${network}`))
      .then(
        (mark) => {
          if (mark !== null) this.learn(Number(mark));
          // Unless the subscription was lost again meanwhile: the cache is current.
          if (store.listening(this.channel)) this.synced = true;
        },
        () => {
          // The subscriber connection can come back before the command connection (each reconnects on its own
          // backoff): nothing else would read the mark again while the subscription holds, so try until it is read.
          if (store.listening(this.channel))
            setTimeout(() => {
              if (!this.synced && store.listening(this.channel)) this.resync();
            }, RESYNC_RETRY_MS).unref();
        },
      );
  }

  private catchUp(local: number, mark: number): Promise<number> {
    if (!this.catching || this.catching.target < mark) {
      const catching = {
        target: mark,
        promise: this.options.waitForHead(mark).catch(() => undefined),
      };
      void catching.promise.finally(() => {
        if (this.catching === catching) this.catching = undefined;
      });
      this.catching = catching;
    }
    return this.catching.promise.then((caughtUp) => Math.max(caughtUp ?? local, mark));
  }

  private mark(local: number): Promise<number> {
    if (!this.running) return this.roundTrip(local);
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
    return this.roundTrip(local);
  }

  private roundTrip(local: number): Promise<number> {
    const { store, network } = this.options;
    const running = store
      .run("head", (redis) => redis.lightfleetRaiseHead(`head:${network}`, local, MARK_TTL_MS, this.channel))
      .then(
        (mark) => {
          this.learn(Number(mark));
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
