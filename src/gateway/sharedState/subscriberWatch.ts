/** The timers a watch uses; real ones by default, a test's own to run it without waiting. */
export interface WatchTimers {
  /** Runs `run` after `ms`; answers its cancel. */
  after(ms: number, run: () => void): () => void;
  /**
   * Runs `run` once the event loop has read what is waiting on its sockets: a deadline timer that fires late on a
   * busy loop must not judge an answer that has arrived but is not read yet.
   */
  afterPendingIo(run: () => void): void;
}

export const realTimers: WatchTimers = {
  after(ms, run) {
    const timer = setTimeout(run, ms);
    timer.unref();
    return () => clearTimeout(timer);
  },
  afterPendingIo(run) {
    setImmediate(run);
  },
};

export interface SubscriberWatchOptions {
  /** Time from one answered PING to the next PING. */
  intervalMs: number;
  /** A PING not answered within this long means the connection has stalled. */
  deadlineMs: number;
  /** Sends one PING on the watched connection. */
  ping(): Promise<unknown>;
  /** Called once when a PING went unanswered; the watch has stopped by then. */
  stalled(): void;
  timers?: WatchTimers;
}

/**
 * Watches a pub/sub connection for a stall that does not close it (packets stop, the socket stays open): a
 * subscriber has nothing to send, so without this nothing would ever notice. It sends a PING every `intervalMs` (Redis
 * answers PING in subscriber mode, on the same ordered stream as the messages) and calls `stalled` when one is not
 * answered within `deadlineMs`. At most one PING is in flight.
 */
export class SubscriberWatch {
  private readonly timers: WatchTimers;
  private cancel: (() => void) | undefined;
  /** Bumped at every start and stop: answers to PINGs of an earlier round are ignored. */
  private round = 0;
  private running = false;

  constructor(private readonly options: SubscriberWatchOptions) {
    this.timers = options.timers ?? realTimers;
  }

  /** Starts watching (again), the first PING one interval from now. */
  start(): void {
    this.stop();
    this.running = true;
    this.schedule(++this.round);
  }

  stop(): void {
    this.running = false;
    this.round++;
    this.cancel?.();
    this.cancel = undefined;
  }

  private schedule(round: number): void {
    this.cancel = this.timers.after(this.options.intervalMs, () => this.send(round));
  }

  private send(round: number): void {
    if (!this.current(round)) return;
    let answered = false;
    this.cancel = this.timers.after(this.options.deadlineMs, () =>
      this.timers.afterPendingIo(() => {
        if (!answered) this.stall(round);
      }),
    );
    // A failed PING counts as unanswered: the deadline decides (a connection that closed meanwhile has stopped the
    // watch, and is not a stall).
    this.options.ping().then(
      () => {
        answered = true;
        if (!this.current(round)) return;
        this.cancel?.();
        this.schedule(round);
      },
      () => undefined,
    );
  }

  private stall(round: number): void {
    if (!this.current(round)) return;
    this.stop();
    this.options.stalled();
  }

  private current(round: number): boolean {
    return this.running && round === this.round;
  }
}
