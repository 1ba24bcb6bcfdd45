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

function what(described: string | (() => string) | undefined): string {
  return (typeof described === "function" ? described() : described) ?? "a condition";
}
