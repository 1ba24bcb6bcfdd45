import { isIPv6 } from "node:net";

/**
 * Bounds the password hashing a process does at once: checks in flight (running or queued) per account and per
 * address (a burst from one source is refused at once rather than queued) and in all (FIFO queues, themselves bounded). scrypt takes a core for about
 * half a second; without these bounds a burst of wrong passwords makes everyone's login wait behind it. A browser the
 * account logged in from before (its device cookie) waits in a queue of its own that goes first, so a burst from
 * many addresses delays the accounts' owners by the checks already running, not by the whole queue; and one check beyond
 * the total is kept for such browsers, so the owner's waits for no guess at all.
 */

/**
 * Which way an attempt waits: `device`, a browser that completed a login to the account (its device cookie): past
 * the per-account bound, ahead in the shared queue; `ahead`, an attempt with something else a guesser lacks (from a
 * network the account completed a login from, or with a current second-factor code): within the bound, ahead of
 * every network in the account's line; `other`, its turn in that line.
 */
export type GateLane = "device" | "ahead" | "other";
export interface HashingGateLimits {
  perAccount: number;
  perAddress: number;
  total: number;
  /** Logins waiting for a free slot; more are refused. */
  queue: number;
  /** Attempts on one account waiting past `perAccount`; more are refused. */
  accountQueue: number;
  /**
   * How long an attempt may wait in an account's line once it serves the newest first (see `AccountLine`) before it
   * is answered 429; 20 s when absent.
   */
  lineMaxWaitMs?: number;
}

export type GateRefusal = "account" | "address" | "busy";

export class HashingGate {
  private readonly byAccount = new Map<string, number>();
  private readonly byAddress = new Map<string, number>();
  private running = 0;
  private readonly waiting: Array<() => void> = [];
  private readonly trustedWaiting: Array<() => void> = [];
  private readonly accountWaiting = new Map<string, AccountLine>();

  constructor(
    private readonly limits: HashingGateLimits,
    private readonly clock: () => number = Date.now,
  ) {}

  /**
   * A slot for one password check, or why there is none. Past the per-account bound an attempt waits in the
   * account's own line (bounded by `accountQueue`) rather than being refused, so guessers keeping an account's checks
   * busy delay the owner's attempt but do not turn it away, and do not take more of the shared queue. See `GateLane`.
   */
  async enter(
    account: string,
    address: string,
    lane: GateLane,
  ): Promise<{ release: () => void } | { refused: GateRefusal }> {
    const trusted = lane === "device";
    if ((this.byAddress.get(address) ?? 0) >= this.limits.perAddress) return { refused: "address" };
    const queue = trusted ? this.trustedWaiting : this.waiting;
    const full = () => this.running >= this.limits.total && queue.length >= this.limits.queue;
    if (full()) return { refused: "busy" };
    bump(this.byAddress, address, 1);
    if (!trusted && (this.byAccount.get(account) ?? 0) >= this.limits.perAccount) {
      const line =
        this.accountWaiting.get(account) ?? new AccountLine(this.clock, this.limits.lineMaxWaitMs ?? 20_000);
      // Each lane is bounded on its own: guesses filling the line leave the owner's networks their place.
      const known = lane === "ahead";
      if ((known ? line.knownSize : line.size - line.knownSize) >= this.limits.accountQueue) {
        // Serving the newest first, the attempt to turn away is the one that has waited longest.
        if (known || !line.newestFirst()) {
          bump(this.byAddress, address, -1);
          return { refused: "account" };
        }
        line.dropOldest();
      }
      this.accountWaiting.set(account, line);
      // Woken by a release that hands its account slot over (the count stays), or turned away after waiting too long.
      const served = await new Promise<boolean>((resolve) =>
        line.push(resolve, known ? undefined : networkOf(address)),
      );
      if (!served) {
        bump(this.byAddress, address, -1);
        return { refused: "account" };
      }
      if (full()) {
        this.releaseAccount(account);
        bump(this.byAddress, address, -1);
        return { refused: "busy" };
      }
    } else bump(this.byAccount, account, 1);
    // A browser with the device cookie has one check of its own beyond the total: it waits for no guess's check to
    // end, only for other such browsers'.
    if (this.running >= this.limits.total + (trusted ? 1 : 0))
      await new Promise<void>((resolve) => queue.push(resolve));
    else this.running++;
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        this.releaseAccount(account);
        bump(this.byAddress, address, -1);
        // Past the total (the device cookie's own check) only a trusted attempt may take the slot over.
        const next =
          this.trustedWaiting.shift() ??
          (this.running > this.limits.total ? undefined : this.waiting.shift());
        // The slot passes straight to the next in line; `running` stays the same.
        if (next) next();
        else this.running--;
      },
    };
  }

  /** Attempts waiting in an account's line (past its per-account bound). */
  inLine(account: string): number {
    return this.accountWaiting.get(account)?.size ?? 0;
  }

  /** Hands an account slot to the next attempt waiting for it, or gives it up. */
  private releaseAccount(account: string): void {
    const line = this.accountWaiting.get(account);
    const next = line?.shift();
    if (line && line.size === 0) this.accountWaiting.delete(account);
    if (next) next();
    else bump(this.byAccount, account, -1);
  }
}

function bump(counts: Map<string, number>, key: string, by: number): void {
  const n = (counts.get(key) ?? 0) + by;
  if (n <= 0) counts.delete(key);
  else counts.set(key, n);
}

/**
 * Past this many networks in an account's line, it serves the newest attempts first. Few networks: a guesser's own,
 * where taking turns by network serves the owner's after one check per network. Many: a botnet, where no network
 * repeats and turns are first come, first served again, so the owner would wait for every guess queued ahead. Newest
 * first ("adaptive LIFO", as large services run their queues under overload) serves the owner's attempt within a few
 * checks: a guesser waiting on its answers sends each next guess only after an answer, so about one guess comes in
 * per check that ends. Attempts that came in between the same two check ends form a batch. The line serves a batch
 * newest first; when only a few of it are left (`FEW`) it serves them, and when only a few came in after it (`LAG`)
 * it goes on to the next batch in order, so the few guesses that come in around the owner's attempt go ahead of it
 * once, not again at every check. Beyond (a burst), it takes the newest batch, and the attempts passed over wait at
 * the bottom: they are answered 429 after the line's longest wait, and a full line turns away its oldest attempt
 * rather than the newest. It changes only the order and who waits: the checks an account gets per second, hence the
 * guesses, stay the same.
 */
export const NEWEST_FIRST_AFTER_NETWORKS = 8;
/** The most left of a batch that are served before a newer batch: about the checks that end at once, and the owner. */
const FEW = 4;
/**
 * The most attempts that may have come in after the batch being served for the line to go on to the next batch in
 * order; beyond (a burst), it goes to the newest.
 */
const LAG = 4;

interface Waiting {
  /** true: its turn; false: turned away (waited past the line's longest wait, or the oldest of a full line). */
  wake: (served: boolean) => void;
  seq: number;
  /** The checks that had ended in this line when it came in: attempts with the same count came in together. */
  batch: number;
  since: number;
}

/**
 * The attempts waiting on one account, served one network at a time (round robin over the networks in line, FIFO
 * within each), or newest first when many networks wait (see `NEWEST_FIRST_AFTER_NETWORKS`). Nothing tells the owner's
 * attempt from a guess before the check; a guesser's attempts mostly come from a few networks, or all at once from
 * many. Attempts from networks the account logged in from before go first of all (a botnet's addresses are elsewhere).
 */
class AccountLine {
  private readonly byNetwork = new Map<string, Waiting[]>();
  private readonly known: Waiting[] = [];
  private seq = 0;
  /** Checks ended (turns handed on) so far. */
  private ended = 0;
  /** The batch being served newest first, until none of it waits. */
  private serving: number | undefined;
  size = 0;

  constructor(
    private readonly clock: () => number,
    private readonly maxWaitMs: number,
  ) {}

  get knownSize(): number {
    return this.known.length;
  }

  newestFirst(): boolean {
    return this.byNetwork.size > NEWEST_FIRST_AFTER_NETWORKS;
  }

  /** `network` undefined: one the account completed a login from, served before any other. */
  push(wake: (served: boolean) => void, network: string | undefined): void {
    this.size++;
    const waiting = { wake, seq: this.seq++, batch: this.ended, since: this.clock() };
    if (network === undefined) {
      this.known.push(waiting);
      return;
    }
    const queue = this.byNetwork.get(network);
    if (queue) queue.push(waiting);
    else this.byNetwork.set(network, [waiting]);
  }

  /** The next attempt's wake-up (its turn), or undefined when none waits. */
  shift(): (() => void) | undefined {
    this.ended++;
    const known = this.known.shift();
    if (known) {
      this.size--;
      return () => known.wake(true);
    }
    if (this.newestFirst()) {
      this.turnAwayLongWaits();
      if (this.newestFirst()) {
        const inBatch = (w: Waiting) => (w.batch === this.serving ? w.seq : undefined);
        const left = this.count(inBatch);
        let next = left > 0 && left <= FEW ? this.take(inBatch) : undefined;
        if (!next) {
          const serving = this.serving ?? -1;
          const newer = this.count((w) => (w.batch > serving ? 1 : undefined));
          // Few came in since: go on to the next batch in order. Many (a burst): the newest batch.
          this.serving = newer > 0 && newer <= LAG ? this.oldestBatchAfter(serving) : this.newestBatch();
          next = this.take(inBatch);
        }
        return next && (() => next.wake(true));
      }
    }
    this.serving = undefined;
    const first = this.byNetwork.entries().next();
    if (first.done) return undefined;
    const [network, queue] = first.value;
    const next = queue.shift()!;
    // The network goes to the back of the round (a Map keeps insertion order), or leaves it when it has no one left.
    this.byNetwork.delete(network);
    if (queue.length > 0) this.byNetwork.set(network, queue);
    this.size--;
    return () => next.wake(true);
  }

  /** Turns away the attempt that has waited longest among the networks' (not a known network's). */
  dropOldest(): void {
    this.take((w) => -w.seq)?.wake(false);
  }

  private count(score: (w: Waiting) => number | undefined): number {
    let n = 0;
    for (const queue of this.byNetwork.values()) for (const w of queue) if (score(w) !== undefined) n++;
    return n;
  }

  private oldestBatchAfter(batch: number): number | undefined {
    let oldest: number | undefined;
    for (const queue of this.byNetwork.values())
      for (const w of queue)
        if (w.batch > batch && (oldest === undefined || w.batch < oldest)) oldest = w.batch;
    return oldest;
  }

  private newestBatch(): number | undefined {
    let newest: number | undefined;
    for (const queue of this.byNetwork.values())
      for (const w of queue) if (newest === undefined || w.batch > newest) newest = w.batch;
    return newest;
  }

  private turnAwayLongWaits(): void {
    const oldest = this.clock() - this.maxWaitMs;
    for (const [network, queue] of [...this.byNetwork]) {
      while (queue.length > 0 && queue[0]!.since <= oldest) {
        queue.shift()!.wake(false);
        this.size--;
      }
      if (queue.length === 0) this.byNetwork.delete(network);
    }
  }

  /**
   * Removes and returns the waiting attempt (a known network's aside) with the highest score, passing over those
   * without one; the networks' round keeps its order. A scan: a line holds a few hundred at most, each behind a check of
   * half a second.
   */
  private take(score: (w: Waiting) => number | undefined): Waiting | undefined {
    let best: { network: string; queue: Waiting[]; index: number; score: number } | undefined;
    for (const [network, queue] of this.byNetwork)
      queue.forEach((w, index) => {
        const value = score(w);
        if (value !== undefined && (!best || value > best.score))
          best = { network, queue, index, score: value };
      });
    if (!best) return undefined;
    const [waiting] = best.queue.splice(best.index, 1);
    if (best.queue.length === 0) this.byNetwork.delete(best.network);
    this.size--;
    return waiting;
  }
}

const IPV4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.\d{1,3}$/;

/**
 * The network an address is in, for the account line's turns: its /24 for IPv4 (IPv4-mapped IPv6 too), its /64 for
 * IPv6 (what one subscriber or one host is usually given). Anything else is its own network.
 */
export function networkOf(address: string): string {
  const plain = address.replace(/%.*$/, "").toLowerCase();
  const v4 = IPV4.exec(plain.replace(/^::ffff:/, ""));
  if (v4) return `${v4[1]}.${v4[2]}.${v4[3]}.0/24`;
  if (!isIPv6(plain)) return address;
  const [head = "", tail] = plain.split("::");
  const left = head ? head.split(":") : [];
  const right = tail ? tail.split(":") : [];
  const groups =
    tail === undefined
      ? left
      : [...left, ...Array<string>(8 - left.length - right.length).fill("0"), ...right];
  return `${groups
    .slice(0, 4)
    .map((g) => parseInt(g, 16).toString(16))
    .join(":")}::/64`;
}
