/** A list + watch cache not confirmed for this long fails /healthz, so the kubelet restarts a process whose watches are stuck. */
export const STALE_CACHE_MS = 10 * 60_000;

/**
 * Why a cache last confirmed at `synced` counts as stale, or undefined while it is fresh (or still listing: a first
 * list that takes long is the readiness check's business, not a reason to restart).
 */
export function staleCache(what: string, synced: number | undefined, now: number): string | undefined {
  if (synced === undefined) return undefined;
  const age = now - synced;
  return age < STALE_CACHE_MS ? undefined : `${what} cache not refreshed for ${Math.round(age / 1000)} s`;
}
