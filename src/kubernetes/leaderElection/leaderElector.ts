import { ApiException, V1MicroTime } from "@kubernetes/client-node";
import type { CoordinationV1Api, V1Lease } from "@kubernetes/client-node";
import type { Logger } from "pino";
import type { LeaderMetrics } from "../../metrics/leaderMetrics.js";
import { decideLease, observe, stillLeading } from "./leaseDecision.js";
import type { LeaseRecord, ObservedLease } from "./leaseDecision.js";

export interface LeaderElectorOptions {
  api: CoordinationV1Api;
  namespace: string;
  /** Lease name, shared by every replica of the controller. */
  name: string;
  /** This replica (the pod name in a cluster). */
  identity: string;
  /**
   * Labels of the Lease (`kubectl get leases -l app.kubernetes.io/instance=...`): set on a Lease this replica creates
   * and added to one it takes; the labels a Lease already has are kept.
   */
  labels?: Record<string, string>;
  /** A follower takes over this long after the leader's last renewal it saw (client-go default 15 s). */
  leaseDurationMs?: number;
  /** A leader that could not renew for this long stops acting (client-go default 10 s). */
  renewDeadlineMs?: number;
  /** Time between attempts (client-go default 2 s). */
  retryPeriodMs?: number;
  clock?: () => number;
  logger: Logger;
  metrics?: LeaderMetrics;
  onChange?: (leading: boolean) => void;
}

/**
 * Leader election on a coordination.k8s.io/v1 Lease, as client-go does it. `isLeader()` answers from the clock, so a
 * leader whose renewals fail stops acting the moment its renew deadline passes, even between attempts.
 */
export class LeaderElector {
  private readonly leaseDurationMs: number;
  private readonly renewDeadlineMs: number;
  private readonly retryPeriodMs: number;
  private readonly clock: () => number;
  private observed: ObservedLease | undefined;
  private lastRenewedAt: number | undefined;
  private leading = false;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private attempt: Promise<void> | undefined;

  constructor(private readonly options: LeaderElectorOptions) {
    this.leaseDurationMs = options.leaseDurationMs ?? 15_000;
    this.renewDeadlineMs = options.renewDeadlineMs ?? 10_000;
    this.retryPeriodMs = options.retryPeriodMs ?? 2_000;
    this.clock = options.clock ?? Date.now;
    if (this.renewDeadlineMs >= this.leaseDurationMs)
      throw new Error("leader election: renewDeadline must be shorter than leaseDuration");
  }

  isLeader(): boolean {
    const leading = this.leading && stillLeading(this.lastRenewedAt, this.clock(), this.renewDeadlineMs);
    if (!leading && this.leading) this.setLeading(false, "renew deadline passed");
    return leading;
  }

  start(): void {
    this.stopped = false;
    this.options.metrics?.leader.set(0);
    this.tick();
  }

  /** Stops campaigning; a leader gives the lease up so a follower takes over at once. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.attempt;
    if (this.leading) {
      this.setLeading(false, "stopping");
      await this.release().catch((error: unknown) =>
        this.options.logger.warn({ err: error }, "leader election: could not release the lease"),
      );
    }
  }

  private tick(): void {
    if (this.stopped) return;
    this.attempt = this.tryAcquireOrRenew()
      .catch((error: unknown) => {
        this.options.logger.warn({ err: error }, "leader election: attempt failed");
      })
      .finally(() => {
        this.isLeader(); // drops leadership once the renew deadline has passed
        if (!this.stopped) this.timer = setTimeout(() => this.tick(), this.retryPeriodMs);
      });
  }

  private async tryAcquireOrRenew(): Promise<void> {
    const { api, namespace, name, identity } = this.options;
    let lease: V1Lease;
    try {
      lease = await api.readNamespacedLease({ name, namespace });
    } catch (error) {
      if (!(error instanceof ApiException) || error.code !== 404) throw error;
      await this.write(() => api.createNamespacedLease({ namespace, body: this.leaseBody(undefined) }));
      return;
    }
    const now = this.clock();
    this.observed = observe(this.observed, recordOf(lease), now);
    const action = decideLease(this.observed, identity, now, this.leaseDurationMs);
    if (action.kind === "follow") {
      if (this.leading) this.setLeading(false, `lease held by ${action.holder}`);
      return;
    }
    await this.write(() => api.replaceNamespacedLease({ name, namespace, body: this.leaseBody(lease) }));
  }

  /** Writes the lease; a 409 means another replica wrote first, which is a lost round, not an error. */
  private async write(call: () => Promise<V1Lease>): Promise<void> {
    const startedAt = this.clock();
    try {
      const written = await call();
      this.observed = { record: recordOf(written), observedAt: startedAt };
      this.lastRenewedAt = startedAt;
      if (!this.leading) this.setLeading(true, "lease acquired");
    } catch (error) {
      if (error instanceof ApiException && error.code === 409) return;
      throw error;
    }
  }

  private leaseBody(current: V1Lease | undefined): V1Lease {
    const now = new V1MicroTime(this.clock());
    const spec = current?.spec ?? {};
    const takingOver = spec.holderIdentity !== this.options.identity;
    return {
      apiVersion: "coordination.k8s.io/v1",
      kind: "Lease",
      // A replace is the whole object: the Lease's own metadata (labels from the chart) goes back with it.
      metadata: {
        ...current?.metadata,
        name: this.options.name,
        namespace: this.options.namespace,
        labels: { ...this.options.labels, ...current?.metadata?.labels },
      },
      spec: {
        holderIdentity: this.options.identity,
        leaseDurationSeconds: Math.ceil(this.leaseDurationMs / 1000),
        acquireTime: takingOver ? now : (spec.acquireTime ?? now),
        renewTime: now,
        leaseTransitions: (spec.leaseTransitions ?? 0) + (current && takingOver ? 1 : 0),
      },
    };
  }

  /** Lets a follower take over at once: an expired, holderless lease (as client-go's ReleaseOnCancel). */
  private async release(): Promise<void> {
    const { api, namespace, name, identity } = this.options;
    const lease = await api.readNamespacedLease({ name, namespace });
    if (lease.spec?.holderIdentity !== identity) return;
    const now = new V1MicroTime(this.clock());
    await api.replaceNamespacedLease({
      name,
      namespace,
      body: {
        ...lease,
        spec: {
          ...lease.spec,
          holderIdentity: "",
          leaseDurationSeconds: 1,
          renewTime: now,
          acquireTime: now,
        },
      },
    });
  }

  private setLeading(leading: boolean, why: string): void {
    this.leading = leading;
    if (!leading) this.lastRenewedAt = undefined;
    this.options.logger.info(
      { identity: this.options.identity, lease: this.options.name },
      `leader election: ${leading ? "leading" : "not leading"} (${why})`,
    );
    this.options.metrics?.leader.set(leading ? 1 : 0);
    this.options.onChange?.(leading);
  }
}

function recordOf(lease: V1Lease): LeaseRecord {
  const renew = lease.spec?.renewTime as unknown;
  return {
    holderIdentity: lease.spec?.holderIdentity,
    renewTime: renew instanceof Date ? renew.toISOString() : renew === undefined ? undefined : String(renew),
    leaseDurationSeconds: lease.spec?.leaseDurationSeconds,
  };
}
