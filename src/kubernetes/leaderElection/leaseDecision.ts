/**
 * The pure part of leader election (the rules of client-go's leaderelection package): whether to take, renew or
 * leave a Lease. Expiry is judged by the local clock from the moment this process last saw the record change, not
 * from the renewTime written by another host, so clock skew between hosts cannot make two leaders.
 */
export interface LeaseRecord {
  holderIdentity?: string;
  /** renewTime as written, used only to notice that the holder renewed. */
  renewTime?: string;
  leaseDurationSeconds?: number;
}

export interface ObservedLease {
  record: LeaseRecord;
  /** Local time (ms) at which this record was first seen. */
  observedAt: number;
}

export type LeaseAction =
  /** Write the lease with us as holder (take it, or renew it). */
  | { kind: "acquire" }
  /** Someone else holds a live lease. */
  | { kind: "follow"; holder: string; expiresAt: number };

export function observe(
  previous: ObservedLease | undefined,
  record: LeaseRecord,
  now: number,
): ObservedLease {
  const same =
    previous !== undefined &&
    previous.record.holderIdentity === record.holderIdentity &&
    previous.record.renewTime === record.renewTime;
  return same ? previous : { record, observedAt: now };
}

export function decideLease(
  observed: ObservedLease,
  identity: string,
  now: number,
  defaultDurationMs: number,
): LeaseAction {
  const holder = observed.record.holderIdentity;
  if (!holder || holder === identity) return { kind: "acquire" };
  const durationMs = (observed.record.leaseDurationSeconds ?? defaultDurationMs / 1000) * 1000;
  const expiresAt = observed.observedAt + durationMs;
  return now < expiresAt ? { kind: "follow", holder, expiresAt } : { kind: "acquire" };
}

/**
 * Whether a leader may still act: only while its last successful renewal is younger than the renew deadline, which
 * is shorter than the lease duration, so it stops before any follower may take over.
 */
export function stillLeading(
  lastRenewedAt: number | undefined,
  now: number,
  renewDeadlineMs: number,
): boolean {
  return lastRenewedAt !== undefined && now - lastRenewedAt < renewDeadlineMs;
}
