import type { FleetMember } from "../fleet/fleet.js";
import type { NodeObservation } from "../health/types.js";
import type { ProbeMetrics } from "../metrics/probeMetrics.js";
import { probeNode } from "../probe/probeNode.js";
import { HttpRpcClient } from "../rpc/httpRpcClient.js";
import type { OutstandingProbes } from "./outstandingProbes.js";

export interface ObserveNodesOptions {
  network: string;
  members: ReadonlyArray<FleetMember>;
  /** The settled height the engine asked for last round (divergence check). */
  checkHeight: number | undefined;
  timeoutMs: number;
  /**
   * How long the round waits for the probes it sends to nodes that answered their last probe. Probes still out after
   * it (and every probe of a node that did not answer its last) are reported by a later round.
   */
  waitMs: number;
  probes: OutstandingProbes;
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
 * incarnation, routing, restarts), giving the engine its node observations. The round waits at most `waitMs`, and
 * never for a node that left its last probe unanswered: one hung node must not hold up decisions about the others.
 * A node without an answer by then is reported as unanswered since its last answer.
 */
export async function observeNodes(options: ObserveNodesOptions): Promise<NodeObservation[]> {
  const { members, clients, probes } = options;
  clients.retain(new Set(members.map((m) => m.httpUrl)));
  const restartInFlight = (member: FleetMember) => member.restarting || options.restarting.has(member.name);
  const probed = members.filter((m) => !restartInFlight(m));
  probes.retain(new Set(probed.map((m) => m.name)));
  const awaited: Array<Promise<void>> = [];
  for (const member of probed) {
    const sent = probes.send(member, () =>
      probeNode(clients.get(member.httpUrl), {
        network: options.network,
        timeoutMs: options.timeoutMs,
        checkHeight: options.checkHeight,
        metrics: options.metrics,
      }),
    );
    if (sent) awaited.push(sent);
  }
  if (awaited.length > 0) await settledWithin(awaited, options.waitMs);
  return members.map((member): NodeObservation => {
    const fleetView = {
      name: member.name,
      startedAt: member.startedAt,
      routed: member.routed,
      restarts: member.restarts,
    };
    // A member being restarted has no process worth probing; the engine shows it as Restarting.
    if (restartInFlight(member))
      return { ...fleetView, restartInFlight: true, reachable: false, error: "restart in progress" };
    return { ...fleetView, restartInFlight: false, ...probes.report(member.name) };
  });
}

/** Resolves when every promise has settled, or after `ms`, whichever comes first. */
async function settledWithin(promises: ReadonlyArray<Promise<void>>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const elapsed = new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)));
  try {
    await Promise.race([Promise.all(promises), elapsed]);
  } finally {
    clearTimeout(timer);
  }
}
