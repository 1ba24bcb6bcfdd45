/** One task waiting in Deadlines; `index` is its place in the heap, -1 once run or cancelled. */
export interface Deadline {
  readonly at: number;
  readonly seq: number;
  task: (() => void) | undefined;
  index: number;
}

/**
 * Tasks due at a time (a read's hedge, its hung bound), kept in a heap by due time and run by one timer set for the
 * earliest. A timer set and cleared per call cost more than the rest of deciding it: here a call adds an entry and
 * removes it when answered, and the one timer is only set again when it goes off or an earlier task comes in
 * (rare: calls come in in time order and wait alike). Tasks due at the same time run in the order they were added.
 * Delays under 1 ms are 1 ms, as setTimeout's. `now` is the clock the due times are read on (injected for tests).
 */
export class Deadlines {
  private readonly heap: Deadline[] = [];
  private timer: ReturnType<typeof setTimeout> | undefined;
  /** When the timer goes off; Infinity while none is set. */
  private armedAt = Infinity;
  private firing = false;
  private seq = 0;

  constructor(private readonly now: () => number) {}

  get size(): number {
    return this.heap.length;
  }

  /** Runs `task` once `ms` have passed, unless cancelled first. */
  after(ms: number, task: () => void): Deadline {
    const entry: Deadline = {
      at: this.now() + Math.max(1, ms),
      seq: this.seq++,
      task,
      index: this.heap.length,
    };
    this.heap.push(entry);
    this.up(entry.index);
    if (!this.firing && entry.at < this.armedAt) this.arm(entry.at);
    return entry;
  }

  /** The task will not run (nothing happens when it ran already). */
  cancel(entry: Deadline): void {
    const at = entry.index;
    entry.task = undefined;
    if (at < 0) return;
    entry.index = -1;
    const last = this.heap.pop()!;
    if (at === this.heap.length) return;
    this.place(last, at);
    this.down(at);
    this.up(last.index);
    // The timer stays set for the task cancelled: it goes off, finds nothing due and is set for the next.
  }

  private arm(at: number): void {
    clearTimeout(this.timer);
    this.armedAt = at;
    // Unref'd: the calls the tasks are for keep their sockets open, and a timer left for answered calls must not keep
    // the process up.
    this.timer = setTimeout(() => this.fire(), Math.max(0, at - this.now()));
    this.timer.unref?.();
  }

  private fire(): void {
    this.timer = undefined;
    this.armedAt = Infinity;
    this.firing = true;
    try {
      const now = this.now();
      while (this.heap.length > 0 && this.heap[0]!.at <= now) {
        const entry = this.heap[0]!;
        const task = entry.task;
        this.cancel(entry);
        task?.();
      }
    } finally {
      this.firing = false;
      if (this.heap.length > 0) this.arm(this.heap[0]!.at);
    }
  }

  private before(a: Deadline, b: Deadline): boolean {
    return a.at < b.at || (a.at === b.at && a.seq < b.seq);
  }

  /** Puts `entry` at `index`, keeping its own record of where it is (for cancel). */
  private place(entry: Deadline, index: number): void {
    this.heap[index] = entry;
    entry.index = index;
  }

  private up(index: number): void {
    const heap = this.heap;
    const entry = heap[index]!;
    while (index > 0) {
      const parent = (index - 1) >> 1;
      if (!this.before(entry, heap[parent]!)) break;
      this.place(heap[parent]!, index);
      index = parent;
    }
    this.place(entry, index);
  }

  private down(index: number): void {
    const heap = this.heap;
    const entry = heap[index]!;
    const length = heap.length;
    for (;;) {
      let child = 2 * index + 1;
      if (child >= length) break;
      if (child + 1 < length && this.before(heap[child + 1]!, heap[child]!)) child++;
      if (!this.before(heap[child]!, entry)) break;
      this.place(heap[child]!, index);
      index = child;
    }
    this.place(entry, index);
  }
}
