import type { EngineOutput, NodeState, PeerObservation } from "../health/types.js";
import type { ResizeStart, ScalingStatus } from "../scaling/scaler.js";

const STATE_COLORS: Record<NodeState, number> = {
  Healthy: 32,
  Starting: 36,
  Restarting: 36,
  Lagging: 33,
  Unresponsive: 31,
  Diverged: 31,
  CrashLoop: 35,
};

export interface FleetViewOptions {
  write: (line: string) => void;
  /** ANSI colours for states (on a terminal). */
  color?: boolean;
  clock?: () => number;
  /** A pool summary is printed when it changes, and at least this often. */
  summaryEveryMs?: number;
  /** A Starting node that climbs gets a progress line at most this often (default 5 s). */
  progressEveryMs?: number;
}

/**
 * The readable view of `up` on a terminal: one line per state transition, restart and systemic change, and a pool
 * summary line when the pool's figures change (or every half minute), instead of a stream of JSON logs.
 */
export class FleetView {
  private readonly summaries = new Map<string, { key: string; at: number }>();
  private readonly systemic = new Map<string, string | undefined>();
  /** Reserved peers by name: whether each was reachable when last seen. */
  private readonly peers = new Map<string, boolean>();
  /** Reserved peers back below the reference (replaying their chain), until they reach it. */
  private readonly replaying = new Set<string>();
  /** Starting nodes: the head and time of their last progress line. */
  private readonly progress = new Map<string, { head: number; at: number }>();
  private readonly clock: () => number;

  constructor(private readonly options: FleetViewOptions) {
    this.clock = options.clock ?? Date.now;
  }

  /**
   * A round of a network, with its reserved peers as the controller sees them now: a peer that goes down or comes
   * back gets a line (one never reached yet is not news: the systemic line covers a network without peers).
   */
  onRound(
    network: string,
    output: EngineOutput,
    peers: ReadonlyArray<Pick<PeerObservation, "name" | "reachable" | "head">> = [],
  ): void {
    const width = Math.max(
      network.length,
      ...output.nodes.map((n) => n.name.length),
      ...peers.map((p) => p.name.length),
    );
    const reference = output.reference?.number;
    for (const peer of peers) {
      const name = peer.name.padEnd(width);
      const was = this.peers.get(peer.name);
      if (was === peer.reachable || (was === undefined && !peer.reachable)) {
        if (
          peer.reachable &&
          this.replaying.has(peer.name) &&
          (reference === undefined || (peer.head?.number ?? -1) >= reference)
        ) {
          this.replaying.delete(peer.name);
          this.options.write(
            `${name}  reserved peer ${this.paintWord("caught up", 32)} (head ${peer.head?.number})`,
          );
        }
        continue;
      }
      this.peers.set(peer.name, peer.reachable);
      if (was === undefined) continue;
      if (!peer.reachable) {
        this.replaying.delete(peer.name);
        this.options.write(`${name}  reserved peer ${this.paintWord("down", 31)} (unreachable)`);
      } else if (peer.head && reference !== undefined && peer.head.number < reference) {
        // A restarted full node replays its chain from a low height: recovering, not a fall of the chain.
        this.replaying.add(peer.name);
        this.options.write(
          `${name}  reserved peer ${this.paintWord("back", 32)}, replaying (head ${peer.head.number}, reference ${reference})`,
        );
      } else {
        this.options.write(
          `${name}  reserved peer ${this.paintWord("back", 32)}${peer.head ? ` (head ${peer.head.number})` : ""}`,
        );
      }
    }
    const moved = new Set<string>();
    for (const decision of output.decisions) {
      if (decision.kind === "transition") {
        moved.add(decision.node);
        const from = decision.from ? this.paint(decision.from) : "new";
        this.options.write(
          `${decision.node.padEnd(width)}  ${from} -> ${this.paint(decision.to)}  (${decision.message})`,
        );
      } else if (decision.kind === "restart") {
        this.options.write(`${decision.node.padEnd(width)}  restart (${decision.reason})`);
      }
    }
    this.showProgress(output, moved, width);
    const cause = output.systemic?.cause;
    if (cause !== this.systemic.get(network)) {
      this.systemic.set(network, cause);
      this.options.write(
        cause
          ? `${network.padEnd(width)}  SYSTEMIC ${cause}: no restarts, routing kept (${output.systemic!.message})`
          : `${network.padEnd(width)}  systemic failure over`,
      );
    }
    this.summarize(network, output, width);
  }

  /** A resize the autoscaler carried out. */
  onResize(status: Pick<ScalingStatus, "network" | "current" | "replicas" | "reason">): void {
    this.options.write(
      `${status.network}  scaled ${status.current} -> ${status.replicas} light nodes (${status.reason})`,
    );
  }

  /** A resize the autoscaler starts (the new members' own lines follow as they start and catch up). */
  onScaling(resize: ResizeStart): void {
    this.options.write(
      `${resize.network}  scaling ${resize.current} -> ${resize.replicas} light nodes (${resize.reason})`,
    );
  }

  /**
   * A Starting node catching up (a new member, or a restarted one replaying its chain) says nothing in transitions
   * until it is Healthy, which can take seconds or minutes: a line every few seconds while its head climbs.
   */
  private showProgress(output: EngineOutput, moved: ReadonlySet<string>, width: number): void {
    const reference = output.reference?.number;
    const now = this.clock();
    const every = this.options.progressEveryMs ?? 5_000;
    for (const node of output.nodes) {
      if (node.state !== "Starting") {
        this.progress.delete(node.name);
        continue;
      }
      if (node.head === undefined || reference === undefined || moved.has(node.name)) continue;
      const last = this.progress.get(node.name);
      if (last && (node.head <= last.head || now - last.at < every)) continue;
      this.progress.set(node.name, { head: node.head, at: now });
      const behind = node.lagBlocks ?? Math.max(0, reference - node.head);
      this.options.write(
        `${node.name.padEnd(width)}  catching up: head ${node.head}, ${behind} blocks behind reference ${reference}`,
      );
    }
  }

  private summarize(network: string, output: EngineOutput, width: number): void {
    const healthy = output.nodes.filter((n) => n.state === "Healthy").length;
    const routed = output.nodes.filter((n) => n.routed).map((n) => n.name);
    const key = `${healthy}/${output.nodes.length}|${routed.join(",")}|${output.systemic?.cause ?? ""}`;
    const now = this.clock();
    const last = this.summaries.get(network);
    if (last && last.key === key && now - last.at < (this.options.summaryEveryMs ?? 30_000)) return;
    this.summaries.set(network, { key, at: now });
    const head = output.reference ? `head ${output.reference.number}` : "no reference head";
    this.options.write(
      `${network.padEnd(width)}  ${head}  ${healthy}/${output.nodes.length} healthy  routed: ${routed.join(" ") || "none"}`,
    );
  }

  private paint(state: NodeState): string {
    return this.paintWord(state, STATE_COLORS[state]);
  }

  private paintWord(word: string, color: number): string {
    return this.options.color ? `\u001b[${color}m${word}\u001b[0m` : word;
  }
}
