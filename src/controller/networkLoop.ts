import type { NetworkConfig } from "../config/sections/network.js";
import type { Fleet } from "../fleet/fleet.js";
import { evaluateNetwork } from "../health/engine.js";
import type {
  Decision,
  EngineOutput,
  NetworkHealthState,
  NetworkParams,
  PeerObservation,
} from "../health/types.js";
import type { Logger } from "../log/logger.js";
import type { ControllerMetrics } from "../metrics/controllerMetrics.js";
import type { ProbeMetrics } from "../metrics/probeMetrics.js";
import { PeerFollower } from "../probe/peerFollower.js";
import { carryOutDecisions, restartMember, type CarryOutOptions } from "./carryOutDecisions.js";
import { ProbeClients, observeNodes } from "./observeNodes.js";
import { OutstandingProbes } from "./outstandingProbes.js";
import { silenceLimitMs } from "../health/nodeCondition.js";

export type RoundListener = (network: string, output: EngineOutput) => void | Promise<void>;

export interface NetworkLoopOptions {
  network: Pick<NetworkConfig, "name" | "chainId" | "blockTimeMs" | "health" | "reservedPeers">;
  fleet: Fleet;
  logger: Logger;
  clock: () => number;
  isLeader: () => boolean;
  /** Engine state to continue from (a network whose config changed); default a cold start. */
  engineState?: NetworkHealthState;
  onRound: (network: string, output: EngineOutput) => Promise<void>;
  metrics?: ControllerMetrics;
  probeMetrics?: ProbeMetrics;
}

/**
 * The control loop of one pool: follows the reserved peers, and runs a round (probe every member, evaluate, act) one
 * probe interval after the last round began, and at once when the peers reach a new height or the fleet's membership
 * changes. Every round therefore brings new evidence (time passed, a new block, a new member or incarnation), so the
 * engine's probe counts (hysteresis) are not inflated by several peers announcing the same block. Rounds never
 * overlap; a round asked for while one runs happens right after it, once, however many times it was asked for.
 */
export class NetworkLoop {
  private readonly params: NetworkParams;
  private readonly followers: PeerFollower[];
  private readonly clients: ProbeClients;
  private readonly probes: OutstandingProbes;
  private readonly restarting = new Set<string>();
  private readonly backgroundRestarts = new Set<Promise<void>>();
  private previous: NetworkHealthState | undefined;
  private last: EngineOutput | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** A round at the moment a silent node's silence starts to count (see silenceRound). */
  private silenceTimer: NodeJS.Timeout | undefined;
  /** A round the engine asked for (output.nextRoundAt): a node just over the lag threshold, judged again. */
  private recheckTimer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private stopped = true;
  private unsubscribe: (() => void) | undefined;
  private roundsRun = 0;
  private lastSystemic: string | undefined;
  /** The peer height that last triggered a round. */
  private triggeredHeight = -1;
  /** The highest peer height announced while a round ran. */
  private pendingHeight = -1;
  /** Members and incarnations as the last round saw them. */
  private membership = "";

  constructor(private readonly options: NetworkLoopOptions) {
    const { network } = options;
    this.params = {
      name: network.name,
      chainId: network.chainId,
      blockTimeMs: network.blockTimeMs,
      health: network.health,
    };
    this.clients = new ProbeClients(network.health.probeTimeout);
    this.probes = new OutstandingProbes(options.clock);
    this.previous = options.engineState;
    this.followers = network.reservedPeers.map(
      (peer) =>
        new PeerFollower({
          network: network.name,
          peer,
          expectedChainId: network.chainId,
          pollIntervalMs: network.health.probeInterval,
          timeoutMs: network.health.probeTimeout,
          clock: options.clock,
          logger: options.logger,
          metrics: options.probeMetrics,
        }),
    );
  }

  get name(): string {
    return this.params.name;
  }

  /** Rounds completed (evaluated, or skipped because this controller does not lead). */
  get rounds(): number {
    return this.roundsRun;
  }

  /** The last round's engine output (undefined before the first evaluated round). */
  get lastOutput(): EngineOutput | undefined {
    return this.last;
  }

  /** What each reserved peer's follower knows now (reachable, head). */
  peerObservations(): PeerObservation[] {
    return this.followers.map((f) => f.observation());
  }

  /** The engine state after the last round, to continue from. */
  get engineState(): NetworkHealthState | undefined {
    return this.previous;
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    for (const follower of this.followers) {
      follower.on("head", () => this.onPeerHead());
      follower.start();
    }
    this.unsubscribe = this.options.fleet.onChange((network) => {
      // Routing changes (often this loop's own) are not news; members coming, going or restarting are.
      if (network === this.params.name && membershipOf(this.options.fleet, network) !== this.membership)
        this.requestRound();
    });
    this.requestRound();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    clearTimeout(this.silenceTimer);
    clearTimeout(this.recheckTimer);
    this.unsubscribe?.();
    for (const follower of this.followers) {
      follower.stop();
      follower.removeAllListeners("head");
    }
    await this.running;
    clearTimeout(this.timer);
    clearTimeout(this.silenceTimer);
    clearTimeout(this.recheckTimer);
    await Promise.all(this.backgroundRestarts);
  }

  /** Runs a round as soon as possible; resolves when a round that started after this call has finished. */
  requestRound(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    if (this.running) {
      this.again = true;
      return this.running.then(() => this.running);
    }
    this.running = this.runRounds().finally(() => (this.running = undefined));
    return this.running;
  }

  /**
   * A round as soon as the quorum of peers has a height no round has seen yet: that is when the reference head can
   * advance, so a node falling behind is seen on the block that puts it behind. One round per height, however many
   * peers announce it.
   */
  private onPeerHead(): void {
    const agreed = quorumHeight(
      this.followers.map((f) => f.observation()),
      this.params.health.peerQuorum,
    );
    if (agreed <= this.triggeredHeight) return;
    // While a round runs, whether it needs a successor is decided when it ends: it may have seen this height itself.
    this.pendingHeight = Math.max(this.pendingHeight, agreed);
    if (!this.running) void this.requestRound();
  }

  private async runRounds(): Promise<void> {
    do {
      this.again = false;
      // The periodic round comes one probe interval after the last round began, whatever triggered that one.
      clearTimeout(this.timer);
      this.timer = setTimeout(() => void this.requestRound(), this.params.health.probeInterval);
      // Heights announced before the round starts are in its peer observations.
      const announced = this.pendingHeight;
      try {
        await this.round();
      } catch (error) {
        this.options.logger.error(
          { network: this.params.name, err: error instanceof Error ? error.message : String(error) },
          "controller round failed",
        );
      }
      this.triggeredHeight = Math.max(this.triggeredHeight, announced);
      this.roundsRun++;
    } while ((this.again || this.pendingHeight > this.triggeredHeight) && !this.stopped);
  }

  private async round(): Promise<void> {
    const { fleet, logger, metrics } = this.options;
    const network = this.params.name;
    if (!this.options.isLeader()) {
      // A follower keeps no engine memory: when it becomes the leader it starts cold from the fleet's routing, as a
      // restarted controller does, rather than from a stale view. Nor does it export one: two replicas' node states
      // side by side would disagree on dashboards and alerts.
      this.previous = undefined;
      metrics?.dropView(network);
      return;
    }
    const members = fleet.members(network);
    this.membership = membershipOf(fleet, network, members);
    // An operator's restart request is carried out at once, outside the engine's budget: the way out of CrashLoop.
    // It shows in this round's observation as a restart in flight.
    const manual: Decision[] = [];
    for (const member of members) {
      if (!member.restartRequested || member.restarting || this.restarting.has(member.name)) continue;
      logger.info({ network, node: member.name }, "restart requested by an operator");
      restartMember(member.name, "manual", this.carryOutOptions());
      manual.push({ kind: "restart", node: member.name, reason: "manual" });
    }
    const { health } = this.params;
    const nodes = await observeNodes({
      network,
      members,
      checkHeight: this.last?.checkHeight,
      timeoutMs: health.probeTimeout,
      // Under a probe interval, so the rounds keep their pace; a probe still out is reported by a later round.
      waitMs: Math.min(health.probeTimeout, health.probeInterval / 2),
      probes: this.probes,
      restarting: this.restarting,
      clients: this.clients,
      metrics: this.options.probeMetrics,
    });
    if (this.stopped) return;
    this.silenceRound(nodes.filter((n) => n.unansweredSince !== undefined).map((n) => n.name));
    const started = performance.now();
    const peers = this.followers.map((f) => f.observation());
    // Heights this round evaluates do not call for another round; later ones do.
    this.triggeredHeight = Math.max(this.triggeredHeight, quorumHeight(peers, this.params.health.peerQuorum));
    const output = evaluateNetwork({
      now: this.options.clock(),
      network: this.params,
      peers,
      nodes,
      previous: this.previous,
    });
    const seconds = (performance.now() - started) / 1000;
    this.previous = output.state;
    this.last = output;
    this.recheckRound(output.nextRoundAt);
    metrics?.observeRound(network, output, seconds);
    logRound(logger, network, output, this.lastSystemic);
    this.lastSystemic = output.systemic?.cause;
    // Leadership may have been lost while probing; a former leader must not act.
    if (!this.options.isLeader()) return;
    await carryOutDecisions(output.decisions, this.carryOutOptions());
    // Listeners hear of an operator's restart too (carried out above, outside the engine).
    await this.options.onRound(
      network,
      manual.length > 0 ? { ...output, decisions: [...manual, ...output.decisions] } : output,
    );
  }

  /**
   * The engine takes a node out of routing once it has been silent for a block plus a probe interval. Rounds come a
   * probe interval apart, which could add most of an interval to that; so a round is also run the moment the first
   * silent node's silence reaches the limit.
   */
  private silenceRound(silent: ReadonlyArray<string>): void {
    clearTimeout(this.silenceTimer);
    this.silenceTimer = undefined;
    const limit = silenceLimitMs(this.params.blockTimeMs, this.params.health);
    const deadline = this.probes.nextSilenceDeadline(silent, limit);
    if (deadline === undefined) return;
    const delay = deadline - this.options.clock();
    if (delay <= 0 || delay >= this.params.health.probeInterval) return;
    this.silenceTimer = setTimeout(() => void this.requestRound(), delay);
  }

  /** A round when the engine asked for one, if that comes before the periodic round. */
  private recheckRound(at: number | undefined): void {
    clearTimeout(this.recheckTimer);
    this.recheckTimer = undefined;
    if (at === undefined || this.stopped) return;
    const delay = Math.max(0, at - this.options.clock());
    if (delay >= this.params.health.probeInterval) return;
    this.recheckTimer = setTimeout(() => void this.requestRound(), delay);
  }

  private carryOutOptions(): CarryOutOptions {
    const { fleet, logger, metrics } = this.options;
    return {
      network: this.params.name,
      fleet,
      logger,
      metrics,
      restarting: this.restarting,
      track: (restart) => {
        this.backgroundRestarts.add(restart);
        void restart.finally(() => this.backgroundRestarts.delete(restart));
      },
    };
  }
}

/** The height at least `quorum` reachable peers (or all of them, if fewer) have reached; -1 without any. */
function quorumHeight(peers: ReadonlyArray<PeerObservation>, quorum: number): number {
  const heights = peers
    .filter((p) => p.reachable && p.head !== undefined)
    .map((p) => p.head!.number)
    .sort((a, b) => b - a);
  if (heights.length === 0) return -1;
  return heights[Math.min(quorum, heights.length) - 1]!;
}

/** A signature of the pool's members and incarnations (not their routing). */
function membershipOf(fleet: Fleet, network: string, members = fleet.members(network)): string {
  return members
    .map(
      (m) =>
        `${m.name}@${m.startedAt}${m.restarting ? "+restarting" : ""}${m.restartRequested ? "+requested" : ""}`,
    )
    .join(",");
}

function logRound(
  logger: Logger,
  network: string,
  output: EngineOutput,
  lastSystemic: string | undefined,
): void {
  for (const decision of output.decisions) {
    if (decision.kind !== "transition") continue;
    logger.info(
      { network, node: decision.node, from: decision.from ?? null, to: decision.to, why: decision.message },
      "node state changed",
    );
  }
  const cause = output.systemic?.cause;
  if (cause !== lastSystemic) {
    if (cause)
      logger.warn(
        { network, cause, why: output.systemic!.message },
        "systemic failure: restarts held, routing kept",
      );
    else logger.info({ network }, "systemic failure over");
  }
}
