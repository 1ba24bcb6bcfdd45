import type { HealthCheck } from "../admin/adminServer.js";
import type { NetworkConfig } from "../config/sections/network.js";
import type { Fleet } from "../fleet/fleet.js";
import type { EngineOutput, NetworkHealthState, PeerObservation } from "../health/types.js";
import type { Logger } from "../log/logger.js";
import type { ControllerMetrics } from "../metrics/controllerMetrics.js";
import type { ProbeMetrics } from "../metrics/probeMetrics.js";
import { NetworkLoop, type RoundListener } from "./networkLoop.js";

export type { RoundListener };

/**
 * What the controller needs of a network (a NetworkConfig, or one built from a LightNodePool). Its `name` names the
 * loop to the fleet, the metrics, the logs and the round listeners: the network on one host, the pool key
 * (`namespace/network`) in a cluster, where one network may run in several namespaces.
 */
export type ControlledNetwork = Pick<
  NetworkConfig,
  "name" | "chainId" | "blockTimeMs" | "health" | "reservedPeers"
>;

export interface ControllerOptions {
  networks: ReadonlyArray<ControlledNetwork>;
  fleet: Fleet;
  logger: Logger;
  /** From createControllerMetrics; the round's node, pool and decision metrics. */
  metrics?: ControllerMetrics;
  probeMetrics?: ProbeMetrics;
  /** Milliseconds since the epoch; the engine's clock. */
  clock?: () => number;
  /** Only the leader evaluates and acts (default: always the leader). Asked before every round and before acting. */
  isLeader?: () => boolean;
  /** Called after each evaluated round, once its decisions are carried out (e.g. to write statuses). */
  onRound?: RoundListener;
}

/**
 * The controller: one loop per network joining the reserved peers' heads, probes of every fleet member, the health
 * engine and the fleet backend that carries out its decisions. Level-based: each round reads the fleet as it is now,
 * so a missed or failed action is simply decided again.
 */
export class Controller {
  private loops: NetworkLoop[];
  private readonly configs = new Map<string, string>();
  private readonly listeners = new Set<RoundListener>();
  private started = false;
  private updating: Promise<void> = Promise.resolve();

  constructor(private readonly options: ControllerOptions) {
    if (options.onRound) this.listeners.add(options.onRound);
    this.loops = options.networks.map((network) => this.createLoop(network));
  }

  start(): void {
    this.started = true;
    for (const loop of this.loops) loop.start();
  }

  /**
   * Replaces the set of networks (pools come and go in Kubernetes). New networks start; removed ones stop and their
   * metric series go; a network whose config changed is restarted with the new config, keeping its engine state
   * (hysteresis, restart timers), so routing is not reshuffled. Unchanged networks are left alone.
   */
  setNetworks(networks: ReadonlyArray<ControlledNetwork>): Promise<void> {
    // One update at a time, in call order.
    this.updating = this.updating.then(() => this.applyNetworks(networks));
    return this.updating;
  }

  private async applyNetworks(networks: ReadonlyArray<ControlledNetwork>): Promise<void> {
    const wanted = new Map(networks.map((n) => [n.name, n]));
    const kept: NetworkLoop[] = [];
    const stopping: Array<Promise<void>> = [];
    for (const loop of this.loops) {
      const next = wanted.get(loop.name);
      if (next && JSON.stringify(next) === this.configs.get(loop.name)) {
        kept.push(loop);
        wanted.delete(loop.name);
        continue;
      }
      stopping.push(
        loop.stop().then(() => {
          if (next) {
            const replacement = this.createLoop(next, loop.engineState);
            this.loops.push(replacement);
            if (this.started) replacement.start();
          } else {
            this.configs.delete(loop.name);
            this.options.metrics?.forgetNetwork(loop.name);
          }
        }),
      );
      if (next) wanted.delete(loop.name);
    }
    this.loops = kept;
    for (const network of wanted.values()) {
      const loop = this.createLoop(network);
      this.loops.push(loop);
      if (this.started) loop.start();
    }
    await Promise.all(stopping);
  }

  /** Stops following and probing; waits for the round and the restarts under way. */
  async stop(): Promise<void> {
    this.started = false;
    await this.updating;
    await Promise.all(this.loops.map((loop) => loop.stop()));
  }

  /** The networks under control. */
  networks(): string[] {
    return this.loops.map((loop) => loop.name);
  }

  /** Adds a round listener; returns a function that removes it. */
  onRound(listener: RoundListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** True once every network has completed a round. */
  ready(): boolean {
    return this.loops.every((loop) => loop.rounds > 0);
  }

  /** For the admin server's /readyz. */
  readinessCheck(): HealthCheck {
    return {
      name: "controller",
      check: () => {
        const waiting = this.loops.filter((loop) => loop.rounds === 0).map((loop) => loop.name);
        return waiting.length === 0
          ? { ok: true }
          : { ok: false, message: `no round completed yet for ${waiting.join(", ")}` };
      },
    };
  }

  /** The reserved peers of a network as their followers see them now (empty for an unknown network). */
  peers(network: string): PeerObservation[] {
    return this.loops.find((loop) => loop.name === network)?.peerObservations() ?? [];
  }

  /** The last engine output of a network (undefined before its first evaluated round). */
  lastOutput(network: string): EngineOutput | undefined {
    return this.loops.find((loop) => loop.name === network)?.lastOutput;
  }

  /** Runs a round of every network now (or right after the one under way) and resolves when they are done. */
  async runRound(): Promise<void> {
    await Promise.all(this.loops.map((loop) => loop.requestRound()));
  }

  private createLoop(network: ControlledNetwork, engineState?: NetworkHealthState): NetworkLoop {
    this.configs.set(network.name, JSON.stringify(network));
    return new NetworkLoop({
      network,
      engineState,
      fleet: this.options.fleet,
      logger: this.options.logger.child({ component: "controller" }),
      clock: this.options.clock ?? Date.now,
      isLeader: this.options.isLeader ?? (() => true),
      metrics: this.options.metrics,
      probeMetrics: this.options.probeMetrics,
      onRound: (name, output) => this.notify(name, output),
    });
  }

  private async notify(network: string, output: EngineOutput): Promise<void> {
    for (const listener of this.listeners) {
      try {
        await listener(network, output);
      } catch (error) {
        this.options.logger.error(
          { network, err: error instanceof Error ? error.message : String(error) },
          "round listener failed",
        );
      }
    }
  }
}
