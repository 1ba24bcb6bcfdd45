import type { Fleet, FleetMember, RestartResult } from "../../src/fleet/fleet.js";
import type { RestartReason } from "../../src/health/types.js";

export interface MemoryMemberInit {
  name: string;
  httpUrl: string;
  routed?: boolean;
  startedAt?: number;
}

/** What a test does when the controller restarts a member: start its replacement, or refuse. */
export type RestartHandler = (
  network: string,
  member: FleetMember,
  reason: RestartReason,
) => Promise<{ httpUrl: string } | RestartResult>;

/**
 * A Fleet kept in memory for controller tests: members point at real nodes the test runs; every call the controller
 * makes is recorded. Restarts are carried out by the test's handler.
 */
export class MemoryFleet implements Fleet {
  readonly routingCalls: Array<{ network: string; member: string; routed: boolean }> = [];
  readonly restartCalls: Array<{ network: string; member: string; reason: RestartReason; at: number }> = [];
  readonly scaleCalls: Array<{ network: string; replicas: number }> = [];
  private readonly byNetwork = new Map<string, FleetMember[]>();
  private readonly listeners = new Set<(network: string) => void>();

  constructor(private readonly restartHandler?: RestartHandler) {}

  add(network: string, init: MemoryMemberInit): FleetMember {
    const member: FleetMember = {
      name: init.name,
      network,
      httpUrl: init.httpUrl,
      startedAt: init.startedAt ?? Date.now(),
      routed: init.routed ?? false,
      restarting: false,
      restarts: [],
    };
    const members = this.byNetwork.get(network) ?? [];
    members.push(member);
    this.byNetwork.set(network, members);
    this.changed(network);
    return member;
  }

  get(network: string, name: string): FleetMember {
    const member = this.byNetwork.get(network)?.find((m) => m.name === name);
    if (!member) throw new Error(`no member ${network}/${name}`);
    return member;
  }

  members(network: string): FleetMember[] {
    return (this.byNetwork.get(network) ?? []).map((m) => ({ ...m, restarts: [...m.restarts] }));
  }

  async setRouted(network: string, member: string, routed: boolean): Promise<void> {
    this.routingCalls.push({ network, member, routed });
    this.get(network, member).routed = routed;
    this.changed(network);
  }

  async restart(network: string, name: string, reason: RestartReason): Promise<RestartResult> {
    this.restartCalls.push({ network, member: name, reason, at: Date.now() });
    const member = this.byNetwork.get(network)?.find((m) => m.name === name);
    if (!member) return { outcome: "gone" };
    if (!this.restartHandler) return { outcome: "deferred", message: "this test fleet does not restart" };
    member.restarting = true;
    try {
      const result = await this.restartHandler(network, member, reason);
      if ("outcome" in result) return result;
      member.httpUrl = result.httpUrl;
      member.startedAt = Date.now();
      member.restarts.push({ at: member.startedAt, reason });
      // As the annotated pod goes with its eviction.
      member.restartRequested = undefined;
      return { outcome: "restarted" };
    } finally {
      member.restarting = false;
      this.changed(network);
    }
  }

  async scale(network: string, replicas: number): Promise<void> {
    this.scaleCalls.push({ network, replicas });
  }

  onChange(listener: (network: string) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** An operator's restart request, as the restart annotation on a pod. */
  requestRestart(network: string, name: string): void {
    this.get(network, name).restartRequested = true;
    this.changed(network);
  }

  routed(network: string): string[] {
    return this.members(network)
      .filter((m) => m.routed)
      .map((m) => m.name);
  }

  private changed(network: string): void {
    for (const listener of this.listeners) listener(network);
  }
}
