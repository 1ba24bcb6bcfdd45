import type { NetworkConfig } from "../config/sections/network.js";
import type { Fleet } from "../fleet/fleet.js";
import { evaluateNetwork } from "../health/engine.js";
import type { EngineOutput, NetworkHealthState, NetworkParams } from "../health/types.js";
import type { Logger } from "../log/logger.js";
import type { ControllerMetrics } from "../metrics/controllerMetrics.js";
import type { ProbeMetrics } from "../metrics/probeMetrics.js";
import { PeerFollower } from "../probe/peerFollower.js";
import { carryOutDecisions } from "./carryOutDecisions.js";
import { ProbeClients, observeNodes } from "./observeNodes.js";

export type RoundListener = (network: string, output: EngineOutput) => void | Promise<void>;

export interface NetworkLoopOptions {
  network: Pick<NetworkConfig, "name" | "chainId" | "blockTimeMs" | "health" | "reservedPeers">;
  fleet: Fleet;
  logger: Logger;
  clock: () => number;
  isLeader: () => boolean;
  onRound: (network: string, output: EngineOutput) => Promise<void>;
  metrics?: ControllerMetrics;
  probeMetrics?: ProbeMetrics;
}

/**
 * The control loop of one pool: follows the reserved peers, and runs a round (probe every member, evaluate, act) every
 * probe interval and at once on every new peer head or fleet change. Rounds never overlap; a round asked for while one
 * runs happens right after it, once, however many times it was asked for.
 */
export class NetworkLoop {
  private readonly params: NetworkParams;
  private readonly followers: PeerFollower[];
  private readonly clients: ProbeClients;
  private readonly restarting = new Set<string>();
  private readonly backgroundRestarts = new Set<Promise<void>>();
  private previous: NetworkHealthState | undefined;
  private last: EngineOutput | undefined;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private stopped = true;
  private unsubscribe: (() => void) | undefined;
  private roundsRun = 0;
  private lastSystemic: string | undefined;

  constructor(private readonly options: NetworkLoopOptions) {
    const { network } = options;
    this.params = {
      name: network.name,
      chainId: network.chainId,
      blockTimeMs: network.blockTimeMs,
      health: network.health,
    };
    this.clients = new ProbeClients(network.health.probeTimeout);
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

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    for (const follower of this.followers) {
      follower.on("head", () => this.requestRound());
      follower.start();
    }
    this.unsubscribe = this.options.fleet.onChange((network) => {
      if (network === this.params.name) this.requestRound();
    });
    this.timer = setInterval(() => this.requestRound(), this.params.health.probeInterval);
    this.requestRound();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    this.unsubscribe?.();
    for (const follower of this.followers) {
      follower.stop();
      follower.removeAllListeners("head");
    }
    await this.running;
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

  private async runRounds(): Promise<void> {
    do {
      this.again = false;
      try {
        await this.round();
      } catch (error) {
        this.options.logger.error(
          { network: this.params.name, err: error instanceof Error ? error.message : String(error) },
          "controller round failed",
        );
      }
      this.roundsRun++;
    } while (this.again && !this.stopped);
  }

  private async round(): Promise<void> {
    const { fleet, logger, metrics } = this.options;
    const network = this.params.name;
    if (!this.options.isLeader()) {
      // A follower keeps no engine memory: when it becomes the leader it starts cold from the fleet's routing, as a
      // restarted controller does, rather than from a stale view.
      this.previous = undefined;
      return;
    }
    const nodes = await observeNodes({
      network,
      members: fleet.members(network),
      checkHeight: this.last?.checkHeight,
      timeoutMs: this.params.health.probeTimeout,
      restarting: this.restarting,
      clients: this.clients,
      metrics: this.options.probeMetrics,
    });
    if (this.stopped) return;
    const started = performance.now();
    const output = evaluateNetwork({
      now: this.options.clock(),
      network: this.params,
      peers: this.followers.map((f) => f.observation()),
      nodes,
      previous: this.previous,
    });
    const seconds = (performance.now() - started) / 1000;
    this.previous = output.state;
    this.last = output;
    metrics?.observeRound(network, output, seconds);
    logRound(logger, network, output, this.lastSystemic);
    this.lastSystemic = output.systemic?.cause;
    // Leadership may have been lost while probing; a former leader must not act.
    if (!this.options.isLeader()) return;
    await carryOutDecisions(output.decisions, {
      network,
      fleet,
      logger,
      metrics,
      restarting: this.restarting,
      track: (restart) => {
        this.backgroundRestarts.add(restart);
        void restart.finally(() => {
          this.backgroundRestarts.delete(restart);
          // The member's new incarnation is worth a look right away.
          this.requestRound();
        });
      },
    });
    await this.options.onRound(network, output);
  }
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
