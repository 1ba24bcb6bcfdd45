import { schedule, type ScheduledTask } from "node-cron";
import type { ScalingConfig } from "../config/sections/scaling.js";
import type { Fleet } from "../fleet/fleet.js";
import type { EngineOutput } from "../health/types.js";
import type { Logger } from "../log/logger.js";
import type { ScalingHoldCause, ScalingMetrics } from "../metrics/scalingMetrics.js";
import { decideScale, type ScaleDecision, type ScalingMemory } from "./decideScale.js";
import { errorMessage } from "./errorMessage.js";
import type { RateReading, RateSource } from "./rateReading.js";
import { describeConflicts, type ScalingConflict } from "./scalingConflicts.js";

export interface ScalerNetwork {
  name: string;
  scaling: ScalingConfig;
}

export interface ScalerOptions {
  networks: ReadonlyArray<ScalerNetwork>;
  /** Carries out sizes (process fleet in `up`, the workload's scale subresource in Kubernetes). */
  fleet: Pick<Fleet, "members" | "scale">;
  /** The pool's size now; by default the fleet's member count. */
  currentReplicas?: (network: string) => number | Promise<number>;
  /** The request-rate source of a network (see createRateSources). */
  source: (network: ScalerNetwork) => RateSource;
  /** Other autoscalers that target the pool's workload (Kubernetes); while there is one, nothing is applied. */
  conflicts?: (network: string) => Promise<ReadonlyArray<ScalingConflict>>;
  clock: () => number;
  logger: Logger;
  metrics?: ScalingMetrics;
  /**
   * The scale-down window's recommendations of a pool this scaler has no memory of yet (a new leader): what the last
   * leader persisted, or a conservative start. Without it the memory starts empty.
   */
  initialMemory?: (network: string, current: number, now: number) => ScalingMemory | undefined;
}

/** The outcome of one scaling round of a pool: for the pool status (desiredReplicas, rate, reason) and Events. */
/** A resize as it starts: from `current` to `replicas` members, and why. */
export interface ResizeStart {
  network: string;
  current: number;
  replicas: number;
  reason: string;
}

export interface ScalingStatus extends ScaleDecision {
  network: string;
  at: number;
  /** The pool's size before this round. */
  current: number;
  /** Whether `replicas` was asked of the fleet this round (false on a hold, when disabled, on a conflict or a failed call). */
  applied: boolean;
  /** Set while another autoscaler owns the workload (or it could not be checked). */
  conflict?: string;
  /** `scaling.enabled` is false: evaluated and exported only. */
  disabled?: true;
  /** Why the fleet refused the size this round. */
  scaleError?: string;
}

/**
 * Scales each pool on its request rate, once per controller round: reads the rate, asks decideScale, and sets the
 * fleet's size. Keeps the algorithm's memory per pool; level-based, so a failed scale call is simply decided again
 * next round.
 */
export class Scaler {
  private networks = new Map<string, ScalerNetwork>();
  private floorListener: ((network: string) => void) | undefined;
  private floorTasks: ScheduledTask[] = [];
  private readonly memory = new Map<string, ScalingMemory>();
  private readonly statuses = new Map<string, ScalingStatus>();
  private readonly logged = new Map<string, string>();
  /** Rounds started by roundBeside and not yet finished, per network. */
  private readonly running = new Map<string, Promise<ScalingStatus | undefined>>();
  private readonly resizeListeners = new Set<(status: ScalingStatus) => void>();
  private readonly startListeners = new Set<(resize: ResizeStart) => void>();

  constructor(private readonly options: ScalerOptions) {
    this.setNetworks(options.networks);
  }

  /**
   * Replaces the pools and their scaling config (pools added, changed or removed while the controller runs). A
   * changed pool keeps its recommendations; a removed one loses its memory and metric series; cron floors are
   * scheduled anew.
   */
  setNetworks(networks: ReadonlyArray<ScalerNetwork>): void {
    const next = new Map(networks.map((network) => [network.name, network]));
    for (const name of this.networks.keys()) {
      if (next.has(name)) continue;
      this.options.metrics?.forgetNetwork(name);
      this.memory.delete(name);
      this.statuses.delete(name);
      this.logged.delete(name);
    }
    this.networks = next;
    if (this.floorListener) this.scheduleFloorTasks(this.floorListener);
  }

  /**
   * Called as a resize starts, before the fleet carries it out (new members may take seconds to catch up): the live
   * view of `up` says so at once. Returns how to unsubscribe.
   */
  onScaling(listener: (resize: ResizeStart) => void): () => void {
    this.startListeners.add(listener);
    return () => this.startListeners.delete(listener);
  }

  /** Called after every resize the fleet carried out (e.g. the live view of `up`); returns how to unsubscribe. */
  onResize(listener: (status: ScalingStatus) => void): () => void {
    this.resizeListeners.add(listener);
    return () => this.resizeListeners.delete(listener);
  }

  /** The last round's outcome of a pool. */
  status(network: string): ScalingStatus | undefined {
    return this.statuses.get(network);
  }

  /**
   * One round of a pool, after the health engine's round (its node states and systemic cause). A pool with
   * `scaling.enabled: false` is evaluated and exported (for KEDA or an HPA to use) but never resized.
   */
  async round(
    network: string,
    engine: Pick<EngineOutput, "nodes" | "systemic">,
  ): Promise<ScalingStatus | undefined> {
    const config = this.networks.get(network);
    if (!config) return undefined;
    const { fleet, metrics, clock } = this.options;
    const source = this.options.source(config);
    const [rate, current, conflict] = await Promise.all([
      source.read(network),
      Promise.resolve(this.options.currentReplicas?.(network) ?? fleet.members(network).length),
      config.scaling.enabled ? this.checkConflicts(network) : undefined,
    ]);
    if (!rate.ok && rate.failed) metrics?.recordSourceError(network, source.kind);

    let starting = 0;
    let healthy = 0;
    for (const node of engine.nodes) {
      if (node.state === "Starting") starting++;
      else if (node.state === "Healthy") healthy++;
    }
    const now = clock();
    const decision = decideScale({
      now,
      params: config.scaling,
      current,
      rate,
      pool: { starting, healthy, ...(engine.systemic ? { systemic: engine.systemic } : {}) },
      previous: this.memory.get(network) ?? this.options.initialMemory?.(network, current, now),
    });
    this.memory.set(network, decision.memory);

    let applied = false;
    let reason = decision.reason;
    let scaleError: string | undefined;
    if (!config.scaling.enabled) {
      reason = `scaling disabled (lightfleet would keep ${decision.replicas}: ${decision.reason})`;
    } else if (conflict !== undefined) {
      reason = `${conflict} (lightfleet would keep ${decision.replicas}: ${decision.reason})`;
    } else if (decision.replicas !== current) {
      for (const listener of this.startListeners)
        listener({ network, current, replicas: decision.replicas, reason: decision.reason });
      try {
        await fleet.scale(network, decision.replicas);
        applied = true;
        metrics?.recordScale(network, decision.replicas > current ? "up" : "down");
      } catch (error) {
        scaleError = errorMessage(error);
        reason = `${decision.reason}; scaling failed: ${scaleError}`;
      }
    }
    const held: ScalingHoldCause | undefined = conflict !== undefined ? "conflict" : decision.held;
    metrics?.observe(network, {
      ...(rate.ok ? { rate: rate.requestsPerSecond } : {}),
      desired: decision.desired,
      floor: decision.floor,
      ...(held ? { held } : {}),
    });
    const status: ScalingStatus = {
      ...decision,
      reason,
      network,
      at: now,
      current,
      applied,
      ...(conflict !== undefined ? { conflict } : {}),
      ...(config.scaling.enabled ? {} : { disabled: true as const }),
      ...(scaleError !== undefined ? { scaleError } : {}),
    };
    this.statuses.set(network, status);
    this.log(status, rate);
    if (applied) for (const listener of this.resizeListeners) listener(status);
    return status;
  }

  /**
   * A round started beside the health rounds, which do not wait for it (a rate read or a resize may take seconds):
   * at most one per network at a time; while one is under way, undefined and nothing starts. It never rejects: a
   * failure goes to `onError`.
   */
  roundBeside(
    network: string,
    engine: Pick<EngineOutput, "nodes" | "systemic">,
    onError: (error: unknown) => void,
  ): Promise<ScalingStatus | undefined> | undefined {
    if (this.running.has(network)) return undefined;
    const round = this.round(network, engine)
      .catch((error: unknown) => {
        onError(error);
        return undefined;
      })
      .finally(() => this.running.delete(network));
    this.running.set(network, round);
    return round;
  }

  /** Resolves once every round started by roundBeside has finished (for a clean stop). */
  async settled(): Promise<void> {
    await Promise.all(this.running.values());
  }

  /**
   * Drops every pool's memory, status and metric series: for a controller that stops leading, so the leader's
   * numbers are the only ones exported, and a later term starts from the cluster as it is then.
   */
  forget(): void {
    for (const network of this.networks.keys()) this.options.metrics?.forgetNetwork(network);
    this.memory.clear();
    this.statuses.clear();
    this.logged.clear();
  }

  /**
   * Schedules a round request at every start and end of every cron floor (node-cron, in the floor's time zone), so a
   * floor takes effect on the minute even between controller rounds. Returns a function that stops the schedules.
   */
  scheduleCronFloors(onFloorChange: (network: string) => void): () => void {
    this.floorListener = onFloorChange;
    this.scheduleFloorTasks(onFloorChange);
    return () => {
      this.floorListener = undefined;
      this.stopFloorTasks();
    };
  }

  private scheduleFloorTasks(onFloorChange: (network: string) => void): void {
    this.stopFloorTasks();
    for (const { name, scaling } of this.networks.values()) {
      for (const floor of scaling.cronFloors) {
        for (const expression of [floor.start, floor.end]) {
          this.floorTasks.push(
            schedule(expression, () => onFloorChange(name), {
              timezone: floor.timezone,
              name: `lightfleet-floor-${name}-${this.floorTasks.length}`,
              suppressMissedWarning: true,
              unref: true,
            }),
          );
        }
      }
    }
  }

  private stopFloorTasks(): void {
    for (const task of this.floorTasks.splice(0)) void task.destroy();
  }

  private async checkConflicts(network: string): Promise<string | undefined> {
    if (!this.options.conflicts) return undefined;
    try {
      const conflicts = await this.options.conflicts(network);
      return conflicts.length > 0 ? describeConflicts(conflicts) : undefined;
    } catch (error) {
      return `could not check for other autoscalers (${errorMessage(error)}); not scaling`;
    }
  }

  /** Logs every size change carried out, and any other decision when it differs from the last one logged. */
  private log(status: ScalingStatus, rate: RateReading): void {
    const { logger } = this.options;
    // A decision not carried out (a hold, a disabled pool, another autoscaler, a refused call) comes back every round:
    // logged when it differs from the last one, not every time.
    const key = [
      status.change,
      status.held,
      status.conflict,
      status.disabled,
      status.scaleError,
      status.replicas,
    ].join(":");
    if (!status.applied && this.logged.get(status.network) === key) return;
    this.logged.set(status.network, key);
    const fields = {
      network: status.network,
      from: status.current,
      to: status.replicas,
      desired: status.desired,
      rate: rate.ok ? rate.requestsPerSecond : null,
      applied: status.applied,
      why: status.reason,
    };
    // A pool left unscaled on purpose only reports; a failing source or a conflict on a scaled pool warns.
    if (status.disabled) logger.debug(fields, "scaling decision");
    else if (status.conflict !== undefined || (!rate.ok && rate.failed))
      logger.warn(fields, "scaling decision");
    else logger.info(fields, "scaling decision");
  }
}
