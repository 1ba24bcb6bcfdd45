/** Polls `check` until it returns a truthy value or the deadline passes; never a blind sleep. */
export async function waitFor<T>(
  check: () => T | Promise<T>,
  /** `what` may be a function: then it is read at the deadline (a failure message with the output up to then). */
  options: { timeoutMs?: number; intervalMs?: number; what?: string | (() => string) } = {},
): Promise<NonNullable<T>> {
  const deadline = Date.now() + (options.timeoutMs ?? 15_000);
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value) return value as NonNullable<T>;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `timed out after ${options.timeoutMs ?? 15_000} ms waiting for ${what(options.what)}` +
          (last ? ` (last error: ${String(last)})` : ""),
      );
    }
    await new Promise((resolve) => setTimeout(resolve, options.intervalMs ?? 25));
  }
}

/**
 * Polls `check` like `waitFor`, but gives up only when `progress` (a measure that grows while the awaited thing is
 * on its way: blocks imported, a head followed) has not grown for `stallMs`, or at `timeoutMs` in all. A loaded
 * machine may be slow, and waiting on while it moves tells slowness from a stall without a bound that load exceeds.
 */
export async function waitForProgress<T>(
  check: () => T | Promise<T>,
  progress: () => number | undefined | Promise<number | undefined>,
  options: { stallMs?: number; timeoutMs?: number; intervalMs?: number; what?: string | (() => string) } = {},
): Promise<NonNullable<T>> {
  const stallMs = options.stallMs ?? 15_000;
  const timeoutMs = options.timeoutMs ?? 120_000;
  const started = Date.now();
  let best = -Infinity;
  let movedAt = started;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value) return value as NonNullable<T>;
      const now = (await progress()) ?? -Infinity;
      if (now > best) {
        best = now;
        movedAt = Date.now();
      }
    } catch (error) {
      last = error;
    }
    const waited = Date.now() - started;
    if (Date.now() - movedAt > stallMs || waited > timeoutMs) {
      throw new Error(
        `gave up after ${waited} ms (no progress for ${Date.now() - movedAt} ms, at ${best}) waiting for ` +
          `${what(options.what)}` +
          (last ? ` (last error: ${String(last)})` : ""),
      );
    }
    await new Promise((resolve) => setTimeout(resolve, options.intervalMs ?? 25));
  }
}

function what(described: string | (() => string) | undefined): string {
  return (typeof described === "function" ? described() : described) ?? "a condition";
}
