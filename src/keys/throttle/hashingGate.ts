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
}

export type GateRefusal = "account" | "address" | "busy";

export class HashingGate {
  private readonly byAccount = new Map<string, number>();
  private readonly byAddress = new Map<string, number>();
  private running = 0;
  private readonly waiting: Array<() => void> = [];
  private readonly trustedWaiting: Array<() => void> = [];
  private readonly accountWaiting = new Map<string, AccountLine>();

  constructor(private readonly limits: HashingGateLimits) {}

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
      const line = this.accountWaiting.get(account) ?? new AccountLine();
      // Each lane is bounded on its own: guesses filling the line leave the owner's networks their place.
      const known = lane === "ahead";
      if ((known ? line.knownSize : line.size - line.knownSize) >= this.limits.accountQueue) {
        bump(this.byAddress, address, -1);
        return { refused: "account" };
      }
      this.accountWaiting.set(account, line);
      // Woken by a release that hands its account slot over (the count stays).
      await new Promise<void>((resolve) => line.push(resolve, known ? undefined : networkOf(address)));
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
 * The attempts waiting on one account, served one network at a time (round robin over the networks in line, FIFO
 * within each). Nothing tells the owner's attempt from a guess before the check, but a guesser's attempts mostly come
 * from a few networks: the owner's, from a network with nobody else in line, waits for one check per network waiting
 * rather than for every guess queued ahead of it. Attempts from networks the account logged in from before go first
 * of all (a botnet's addresses are elsewhere). It changes only the order: every attempt still gets its check.
 */
class AccountLine {
  private readonly byNetwork = new Map<string, Array<() => void>>();
  private readonly known: Array<() => void> = [];
  size = 0;

  get knownSize(): number {
    return this.known.length;
  }

  /** `network` undefined: one the account completed a login from, served before any other. */
  push(wake: () => void, network: string | undefined): void {
    this.size++;
    if (network === undefined) {
      this.known.push(wake);
      return;
    }
    const queue = this.byNetwork.get(network);
    if (queue) queue.push(wake);
    else this.byNetwork.set(network, [wake]);
  }

  shift(): (() => void) | undefined {
    const known = this.known.shift();
    if (known) {
      this.size--;
      return known;
    }
    const first = this.byNetwork.entries().next();
    if (first.done) return undefined;
    const [network, queue] = first.value;
    const wake = queue.shift();
    // The network goes to the back of the round (a Map keeps insertion order), or leaves it when it has no one left.
    this.byNetwork.delete(network);
    if (queue.length > 0) this.byNetwork.set(network, queue);
    this.size--;
    return wake;
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
