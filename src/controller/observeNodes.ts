import type { FleetMember } from "../fleet/fleet.js";
import type { NodeObservation } from "../health/types.js";
import type { ProbeMetrics } from "../metrics/probeMetrics.js";
import { probeNode } from "../probe/probeNode.js";
import { HttpRpcClient } from "../rpc/httpRpcClient.js";

export interface ObserveNodesOptions {
  network: string;
  members: ReadonlyArray<FleetMember>;
  /** The settled height the engine asked for last round (divergence check). */
  checkHeight: number | undefined;
  timeoutMs: number;
  /** Members whose restart call the controller is still waiting for. */
  restarting: ReadonlySet<string>;
  clients: ProbeClients;
  metrics?: ProbeMetrics;
}

/** One HTTP client per node URL, kept across rounds; clients of nodes that left are dropped. */
export class ProbeClients {
  private readonly byUrl = new Map<string, HttpRpcClient>();

  constructor(private readonly timeoutMs: number) {}

  get(url: string): HttpRpcClient {
    let client = this.byUrl.get(url);
    if (!client) {
      client = new HttpRpcClient(url, this.timeoutMs);
      this.byUrl.set(url, client);
    }
    return client;
  }

  retain(urls: ReadonlySet<string>): void {
    for (const url of this.byUrl.keys()) if (!urls.has(url)) this.byUrl.delete(url);
  }
}

/**
 * Probes every member of a pool in parallel and joins each probe with what the fleet knows of the member (its
 * incarnation, routing, restarts), giving the engine its node observations.
 */
export async function observeNodes(options: ObserveNodesOptions): Promise<NodeObservation[]> {
  const { members, clients } = options;
  clients.retain(new Set(members.map((m) => m.httpUrl)));
  return Promise.all(
    members.map(async (member): Promise<NodeObservation> => {
      const restartInFlight = member.restarting || options.restarting.has(member.name);
      const fleetView = {
        name: member.name,
        startedAt: member.startedAt,
        routed: member.routed,
        restarts: member.restarts,
        restartInFlight,
      };
      // A member being restarted has no process worth probing; the engine shows it as Restarting.
      if (restartInFlight) return { ...fleetView, reachable: false, error: "restart in progress" };
      const probe = await probeNode(clients.get(member.httpUrl), {
        network: options.network,
        timeoutMs: options.timeoutMs,
        checkHeight: options.checkHeight,
        metrics: options.metrics,
      });
      return { ...fleetView, ...probe };
    }),
  );
}
