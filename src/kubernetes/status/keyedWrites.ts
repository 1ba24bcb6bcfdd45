/**
 * Runs writes to API objects with bounded concurrency: at most `concurrency` in flight overall, and at most one per
 * object key, so an object's writes reach the server in the order they were submitted. A write submitted while the
 * same key's previous write is still waiting to start replaces it (the newest status supersedes an older one that
 * has not been sent), so the queue holds at most one waiting write per object however slow the server is.
 */
export class KeyedWrites {
  private readonly waiting = new Map<string, { write: () => Promise<void>; done: Array<() => void> }>();
  private readonly running = new Set<string>();
  private idleWaiters: Array<() => void> = [];

  constructor(
    private readonly concurrency: number,
    /** Called with a write's rejection; writes are expected to handle their own failures. */
    private readonly onError: (key: string, error: unknown) => void = () => {},
  ) {
    if (!Number.isInteger(concurrency) || concurrency < 1)
      throw new Error("concurrency must be a positive integer");
  }

  /**
   * Queues `write` for `key`; it starts once a slot is free and the key's previous write has settled. Resolves when
   * it (or a newer write of the key that replaced it before it started) has settled; never rejects.
   */
  submit(key: string, write: () => Promise<void>): Promise<void> {
    return new Promise((resolve) => {
      const replaced = this.waiting.get(key);
      this.waiting.set(key, { write, done: [...(replaced?.done ?? []), resolve] });
      this.pump();
    });
  }

  /** Drops the key's write that has not started yet (its object is gone); one in flight runs on. */
  cancel(key: string): void {
    const entry = this.waiting.get(key);
    if (!entry) return;
    this.waiting.delete(key);
    for (const resolve of entry.done) resolve();
    this.pump();
  }

  /** Drops every write that has not started yet; those in flight run on. */
  cancelAll(): void {
    for (const key of [...this.waiting.keys()]) this.cancel(key);
  }

  /** True while a write of `key` is waiting or in flight. */
  busy(key: string): boolean {
    return this.running.has(key) || this.waiting.has(key);
  }

  /** Writes in flight now. */
  get inFlight(): number {
    return this.running.size;
  }

  /** Resolves once nothing is waiting or in flight. */
  idle(): Promise<void> {
    if (this.running.size === 0 && this.waiting.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private pump(): void {
    if (this.running.size >= this.concurrency) return;
    // Oldest first; keys in flight are skipped, and there are at most `concurrency` of them.
    for (const [key, entry] of this.waiting) {
      if (this.running.has(key)) continue;
      this.waiting.delete(key);
      this.start(key, entry);
      if (this.running.size >= this.concurrency) return;
    }
    if (this.running.size === 0 && this.waiting.size === 0) {
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      for (const resolve of waiters) resolve();
    }
  }

  private start(key: string, entry: { write: () => Promise<void>; done: Array<() => void> }): void {
    this.running.add(key);
    const report = (error: unknown) => {
      try {
        this.onError(key, error);
      } catch {
        // A failing error handler must not stall the queue.
      }
    };
    let settled: Promise<void>;
    try {
      settled = entry.write();
    } catch (error) {
      settled = Promise.reject(error);
    }
    void settled.catch(report).finally(() => {
      this.running.delete(key);
      for (const resolve of entry.done) resolve();
      this.pump();
    });
  }
}
