import type { NodeObservation } from "../health/types.js";
import type { NodeProbe } from "../probe/probeNode.js";

/** What a round learns of one node's probe: its answer, or how long the node has been silent. */
export type ProbeReport = NodeProbe & Pick<NodeObservation, "unansweredSince">;

interface MemberProbes {
  /** The incarnation these probes belong to; a new one starts over. */
  startedAt: number;
  /** A probe sent and not yet settled. */
  outstanding?: Promise<void>;
  /** A settled probe no round has reported yet. */
  settled?: NodeProbe;
  /** When the node last answered, or was first probed in this incarnation (clock ms). */
  answeredAt?: number;
  /** Whether the node's last settled probe answered: a round waits only for nodes in good standing. */
  answering: boolean;
}

/**
 * Each node's probe across rounds, so that a round need not wait for a slow or hung node: at most one probe per
 * node is outstanding, a round sends a new one only to nodes without one, and a probe that settles after its round
 * is reported by the next. A node still silent at the end of a round is reported as unanswered since its last
 * answer, and the engine judges that silence.
 */
export class OutstandingProbes {
  private readonly byName = new Map<string, MemberProbes>();

  constructor(private readonly clock: () => number) {}

  /**
   * Sends `probe` to the node unless one is outstanding. Returns the new probe's settlement when the round should
   * wait for it (the node answered its last probe), undefined otherwise.
   */
  send(
    member: { name: string; startedAt: number },
    probe: () => Promise<NodeProbe>,
  ): Promise<void> | undefined {
    let entry = this.byName.get(member.name);
    if (entry === undefined || entry.startedAt !== member.startedAt) {
      entry = { startedAt: member.startedAt, answering: true };
      this.byName.set(member.name, entry);
    }
    if (entry.outstanding !== undefined) return undefined;
    const probes = entry;
    probes.answeredAt ??= this.clock();
    const sent = probe()
      .catch((error: unknown): NodeProbe => ({ reachable: false, error: String(error) }))
      .then((result) => {
        probes.settled = result;
        probes.answering = result.reachable;
        if (result.reachable) probes.answeredAt = this.clock();
        probes.outstanding = undefined;
      });
    probes.outstanding = sent;
    return probes.answering ? sent : undefined;
  }

  /** This round's report of the node: the settled probe (handed over once), or the silence since its last answer. */
  report(name: string): ProbeReport {
    const entry = this.byName.get(name);
    const settled = entry?.settled;
    if (entry !== undefined && settled !== undefined) {
      entry.settled = undefined;
      return settled;
    }
    const since = entry?.answeredAt ?? this.clock();
    return {
      reachable: false,
      error: `no answer for ${this.clock() - since} ms`,
      unansweredSince: since,
    };
  }

  /** Forgets nodes no longer probed (gone, or being restarted): their late answers are dropped. */
  retain(names: ReadonlySet<string>): void {
    for (const name of this.byName.keys()) if (!names.has(name)) this.byName.delete(name);
  }

  /** The earliest time one of the nodes reported silent reaches `limit` ms of silence, if any is silent. */
  nextSilenceDeadline(names: Iterable<string>, limit: number): number | undefined {
    let earliest: number | undefined;
    for (const name of names) {
      const entry = this.byName.get(name);
      if (entry?.outstanding === undefined || entry.answeredAt === undefined) continue;
      const at = entry.answeredAt + limit;
      if (earliest === undefined || at < earliest) earliest = at;
    }
    return earliest;
  }
}
