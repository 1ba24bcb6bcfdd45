import type { HealthCheck } from "../admin/adminServer.js";
import type { NetworkConfig } from "../config/sections/network.js";
import type { Fleet } from "../fleet/fleet.js";
import type { EngineOutput } from "../health/types.js";
import type { Logger } from "../log/logger.js";
import type { ControllerMetrics } from "../metrics/controllerMetrics.js";
import type { ProbeMetrics } from "../metrics/probeMetrics.js";
import { NetworkLoop, type RoundListener } from "./networkLoop.js";

export type { RoundListener };

export interface ControllerOptions {
  networks: ReadonlyArray<
    Pick<NetworkConfig, "name" | "chainId" | "blockTimeMs" | "health" | "reservedPeers">
  >;
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
  private readonly loops: NetworkLoop[];
  private readonly listeners = new Set<RoundListener>();

  constructor(private readonly options: ControllerOptions) {
    if (options.onRound) this.listeners.add(options.onRound);
    this.loops = options.networks.map(
      (network) =>
        new NetworkLoop({
          network,
          fleet: options.fleet,
          logger: options.logger.child({ component: "controller" }),
          clock: options.clock ?? Date.now,
          isLeader: options.isLeader ?? (() => true),
          metrics: options.metrics,
          probeMetrics: options.probeMetrics,
          onRound: (name, output) => this.notify(name, output),
        }),
    );
  }

  start(): void {
    for (const loop of this.loops) loop.start();
  }

  /** Stops following and probing; waits for the round and the restarts under way. */
  async stop(): Promise<void> {
    await Promise.all(this.loops.map((loop) => loop.stop()));
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

  /** The last engine output of a network (undefined before its first evaluated round). */
  lastOutput(network: string): EngineOutput | undefined {
    return this.loops.find((loop) => loop.name === network)?.lastOutput;
  }

  /** Runs a round of every network now (or right after the one under way) and resolves when they are done. */
  async runRound(): Promise<void> {
    await Promise.all(this.loops.map((loop) => loop.requestRound()));
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
