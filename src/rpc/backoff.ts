/**
 * Exponential backoff with "equal jitter": half the delay is fixed, half random, so reconnecting clients spread
 * out without ever retrying immediately. `random` is injectable for tests.
 */
export function backoffDelay(
  attempt: number,
  baseMs: number,
  maxMs: number,
  random: () => number = Math.random,
): number {
  const exp = Math.min(maxMs, baseMs * 2 ** Math.max(0, attempt));
  return Math.round(exp / 2 + (random() * exp) / 2);
}
