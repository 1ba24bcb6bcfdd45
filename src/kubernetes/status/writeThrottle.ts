/**
 * When a status object (a LightNode, a LightNodePool) is written. Three kinds of news, three rules:
 * - a change (a node's state or routing, a pool's counts or conditions) is written at once, always;
 * - progress alone (a head, a lag, a reference head moving with the blocks) at most every `progressIntervalMs` per
 *   object, and only while the fleet-wide budget has room, so `kubectl get ln -w` follows the chain without the
 *   block rate times the fleet's size reaching the API server;
 * - nothing new: a refresh every `refreshIntervalMs`, so `lastProbeTime` still says the controller is alive.
 * Pure: the caller passes the clock's reading.
 */

export interface WriteThrottleOptions {
  /** Progress alone is written at most this often per object. */
  progressIntervalMs: number;
  /** An object is written at least this often, news or not; the first refresh is dated by `refreshOffset`. */
  refreshIntervalMs: number;
  /** Writes per second, fleet-wide, that progress may use: changes and refreshes draw on it too but never wait. */
  writesPerSecond: number;
  /** Writes the budget holds at most (a quiet spell saves up no more than this). */
  burst: number;
}

export const DEFAULT_WRITE_THROTTLE: WriteThrottleOptions = {
  progressIntervalMs: 2_000,
  refreshIntervalMs: 30_000,
  writesPerSecond: 10,
  burst: 10,
};

/** What an object's status says, split by the rule each part follows. */
export interface StatusNews {
  /** What must be written at once when it differs (a state, a condition's status). */
  change: string;
  /** What moves with the blocks (a head, a lag): written when it differs, bounded. */
  progress: string;
  /** The number progress is judged by (a node's lag, a pool's reference head): how far it moved ranks the writes. */
  measure: number;
}

/** What the last write of an object said, and when it went out. */
export interface SentStatus extends StatusNews {
  writtenAt: number;
  /** When a refresh is due if nothing else is written before. */
  refreshAt: number;
}

export type WriteNeed = "change" | "refresh" | "progress";

/** Why an object should be written now, or undefined when it need not be (progress still waits on the budget). */
export function writeNeed(
  previous: SentStatus | undefined,
  next: StatusNews,
  now: number,
  options: WriteThrottleOptions,
): WriteNeed | undefined {
  if (!previous || previous.change !== next.change) return "change";
  if (now >= previous.refreshAt) return "refresh";
  if (previous.progress !== next.progress && now - previous.writtenAt >= options.progressIntervalMs)
    return "progress";
  return undefined;
}

/** The record of a write sent now; `firstRefreshOffsetMs` spreads the refreshes of objects first written together. */
export function sentNow(
  news: StatusNews,
  now: number,
  options: WriteThrottleOptions,
  firstRefreshOffsetMs = 0,
): SentStatus {
  return { ...news, writtenAt: now, refreshAt: now + options.refreshIntervalMs + firstRefreshOffsetMs };
}

/**
 * The fleet-wide budget of writes: a token bucket refilled at `writesPerSecond` up to `burst`. Writes that must go
 * (changes, refreshes) spend from it without waiting, down to empty; progress is written only with a token left.
 */
export class WriteBudget {
  private tokens: number;
  private filledAt: number | undefined;

  constructor(private readonly options: Pick<WriteThrottleOptions, "writesPerSecond" | "burst">) {
    if (!(options.writesPerSecond > 0) || !(options.burst >= 1))
      throw new Error("the write budget needs writesPerSecond > 0 and burst >= 1");
    this.tokens = options.burst;
  }

  /** Spends one write that goes whatever the budget says. */
  spend(now: number): void {
    this.refill(now);
    this.tokens = Math.max(0, this.tokens - 1);
  }

  /** Takes one write's worth if there is one: true when a progress write may go. */
  tryTake(now: number): boolean {
    this.refill(now);
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }

  private refill(now: number): void {
    if (this.filledAt !== undefined && now > this.filledAt)
      this.tokens = Math.min(
        this.options.burst,
        this.tokens + ((now - this.filledAt) / 1000) * this.options.writesPerSecond,
      );
    if (this.filledAt === undefined || now > this.filledAt) this.filledAt = now;
  }
}

/** One object of a round that has news to write. */
export interface WriteCandidate {
  need: WriteNeed;
  /** When its last write went out. */
  writtenAt: number;
  /** How far what was written is from the truth, in blocks (a lag's change): the most wrong goes first. */
  drift: number;
}

/** The candidate for an object whose write is due for `need`. */
export function writeCandidate(
  need: WriteNeed,
  previous: SentStatus | undefined,
  next: StatusNews,
): WriteCandidate {
  return {
    need,
    writtenAt: previous?.writtenAt ?? -Infinity,
    drift: previous ? Math.abs(next.measure - previous.measure) : Infinity,
  };
}

/**
 * Which of a round's candidates to write: every change and refresh, then progress while the budget lasts, the most
 * wrong first (a lag that grew) and then the longest unwritten, so under the cap every object still gets its turn.
 */
export function pickWrites<T extends WriteCandidate>(
  candidates: readonly T[],
  budget: WriteBudget,
  now: number,
): T[] {
  const picked: T[] = [];
  for (const c of candidates) {
    if (c.need === "progress") continue;
    budget.spend(now);
    picked.push(c);
  }
  const progress = candidates
    .filter((c) => c.need === "progress")
    .sort((a, b) => b.drift - a.drift || a.writtenAt - b.writtenAt);
  for (const c of progress) {
    if (!budget.tryTake(now)) break;
    picked.push(c);
  }
  return picked;
}
