/**
 * Whether resourceVersion `a` is older than `b` for the same object. Kubernetes 1.35 made resource versions
 * comparable (KEP-5504): decimal integers that only grow, of any size. They are compared as such, by length then
 * digits, never through Number (they may pass 2^53). Anything else is not ordered, and is not called older.
 */
export function olderResourceVersion(a: string | undefined, b: string | undefined): boolean {
  if (a === undefined || b === undefined || !DECIMAL.test(a) || !DECIMAL.test(b)) return false;
  return a.length !== b.length ? a.length < b.length : a < b;
}

const DECIMAL = /^[1-9][0-9]*$/;
