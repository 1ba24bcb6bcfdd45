import { mkdir } from "node:fs/promises";
import { resolve } from "node:path";
import type { ProcessFleetConfig } from "../../config/sections/processFleet.js";
import { anvilBinary } from "../../process/anvilBinary.js";
import type { RestartReason, RestartRecord } from "../../health/types.js";
import type { Logger } from "../../log/logger.js";
import type { Fleet, FleetMember, RestartResult } from "../fleet.js";
import { fillCommand, type PlaceholderValues } from "./commandTemplate.js";
import { freePort } from "../../process/freePort.js";
import { startMemberProcess, type MemberProcess } from "./memberProcess.js";

export interface ProcessFleetNetwork {
  name: string;
  chainId: number;
  nodes: ProcessFleetConfig;
}

/** A member that just started answering: what a devnet needs to replay it and to kill it on request. */
export interface StartedMember {
  name: string;
  network: string;
  httpUrl: string;
  wsUrl: string;
  kill: () => void;
}

export interface ProcessFleetOptions {
  networks: ReadonlyArray<ProcessFleetNetwork>;
  /** Members' data directories live under `<dataDir>/nodes/<member>`. */
  dataDir: string;
  logger: Logger;
  /** Placeholder values besides the per-member ones (e.g. the devnet's `genesisTimestamp`). */
  placeholders?: PlaceholderValues;
  /** Called when a member (or a new incarnation of it) answers; e.g. to attach it to the devnet. */
  onStarted?: (member: StartedMember) => Promise<void>;
  /**
   * Called before each start of a member, with its data directory; answers placeholders for its command (a geth
   * devnet readies the directory and gives it an engine port).
   */
  prepare?: (member: { name: string; network: string; dataDir: string }) => Promise<PlaceholderValues>;
  /** Called before a member is stopped (restart, scale down, shutdown); e.g. to detach it from the devnet. */
  onStopping?: (member: { name: string; network: string }) => void;
}

/** Restart records kept per member: enough for the crash-loop window and backoff. */
const KEPT_RESTARTS = 50;

interface Slot {
  name: string;
  network: ProcessFleetNetwork;
  index: number;
  port: number;
  httpUrl: string;
  startedAt: number;
  routed: boolean;
  restarting: boolean;
  restarts: RestartRecord[];
  /** `lightfleet node restart` asked for a restart the controller has not carried out yet. */
  restartRequested: boolean;
  process: MemberProcess | undefined;
  /** Set when the member is being removed (scale down, shutdown); an exit is then expected. */
  leaving: boolean;
}

/**
 * The Fleet of `lightfleet up`: light nodes as child processes started from a command template per network. A member
 * that exits is not respawned by itself: it shows as unresponsive and the controller decides on a restart, exactly as
 * it would for a pod. Restart is stop and respawn (same name and port, new incarnation). Children run in their own
 * process groups and die with the supervisor.
 */
export class ProcessFleet implements Fleet {
  private readonly slots = new Map<string, Slot[]>();
  private readonly listeners = new Set<(network: string) => void>();
  private readonly logger: Logger;
  private stopped = false;
  private readonly scaling = new Map<string, Promise<void>>();

  constructor(private readonly options: ProcessFleetOptions) {
    this.logger = options.logger.child({ component: "process-fleet" });
    for (const network of options.networks) this.slots.set(network.name, []);
  }

  /** Starts every network's configured replicas; resolves when they answer (a member that fails is logged). */
  async start(): Promise<void> {
    await Promise.all(this.options.networks.map((n) => this.scale(n.name, n.nodes.replicas)));
  }

  /** Stops every member. */
  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all(
      [...this.slots.values()].flatMap((slots) => slots.splice(0).map((slot) => this.retire(slot))),
    );
  }

  members(network: string): FleetMember[] {
    return (this.slots.get(network) ?? []).map((slot) => ({
      name: slot.name,
      network,
      httpUrl: slot.httpUrl,
      wsUrl: slot.httpUrl.replace(/^http/, "ws"),
      startedAt: slot.startedAt,
      routed: slot.routed,
      restarting: slot.restarting,
      restarts: [...slot.restarts],
      ...(slot.restartRequested ? { restartRequested: true } : {}),
    }));
  }

  /** The members the gateway may use. */
  routedMembers(network: string): FleetMember[] {
    return this.members(network).filter((m) => m.routed);
  }

  async setRouted(network: string, member: string, routed: boolean): Promise<void> {
    const slot = this.find(network, member);
    if (!slot || slot.routed === routed) return;
    slot.routed = routed;
    this.changed(network);
  }

  async restart(network: string, member: string, reason: RestartReason): Promise<RestartResult> {
    const slot = this.find(network, member);
    if (!slot) return { outcome: "gone" };
    if (slot.restarting) return { outcome: "deferred", message: "a restart is already under way" };
    slot.restarting = true;
    slot.restartRequested = false;
    this.changed(network);
    this.logger.info({ network, member, reason }, "restarting member");
    try {
      await this.stopProcess(slot);
      slot.restarts = [...slot.restarts, { at: Date.now(), reason }].slice(-KEPT_RESTARTS);
      await this.launch(slot);
    } finally {
      slot.restarting = false;
      this.changed(network);
    }
    return { outcome: "restarted" };
  }

  /**
   * Marks a member (of whichever network) for a restart by the controller, as the restart annotation does to a pod;
   * returns its network, or undefined when no member has that name.
   */
  requestRestart(member: string): string | undefined {
    for (const [network, slots] of this.slots) {
      const slot = slots.find((s) => s.name === member);
      if (!slot) continue;
      // A restart under way already gives the member a new process: the request is met by it.
      if (!slot.restarting) {
        slot.restartRequested = true;
        this.changed(network);
      }
      return network;
    }
    return undefined;
  }

  /** Every member's name, over all networks (for messages naming what exists). */
  memberNames(): string[] {
    return [...this.slots.values()].flatMap((slots) => slots.map((s) => s.name));
  }

  /** Starts or stops members to reach `replicas`; calls for one network run one after another. */
  scale(network: string, replicas: number): Promise<void> {
    const slots = this.slots.get(network);
    const config = this.options.networks.find((n) => n.name === network);
    if (!slots || !config) return Promise.reject(new Error(`unknown network ${network}`));
    if (!Number.isInteger(replicas) || replicas < 0)
      return Promise.reject(new Error(`replicas must be a whole number of at least 0 (got ${replicas})`));
    const previous = this.scaling.get(network) ?? Promise.resolve();
    const next = previous.then(() => this.resize(slots, config, replicas));
    this.scaling.set(
      network,
      next.catch(() => undefined),
    );
    return next;
  }

  private async resize(slots: Slot[], config: ProcessFleetNetwork, replicas: number): Promise<void> {
    if (this.stopped) return;
    const network = config.name;
    const removed = slots.splice(replicas);
    const added: Slot[] = [];
    for (let index = slots.length; index < replicas; index++) {
      const port = config.nodes.basePort > 0 ? config.nodes.basePort + index : await freePort();
      const slot: Slot = {
        name: `${network}-light-${index}`,
        network: config,
        index,
        port,
        httpUrl: `http://127.0.0.1:${port}`,
        startedAt: Date.now(),
        routed: false,
        restarting: false,
        restarts: [],
        restartRequested: false,
        process: undefined,
        leaving: false,
      };
      added.push(slot);
    }
    if (removed.length > 0) this.changed(network);
    // A member is listed as soon as it answers, before it is attached (a devnet replays it to the head meanwhile,
    // seconds on a long chain): the controller sees it Starting and catching up, and the operator sees it at once.
    // One that fails to start is listed all the same (it shows as unresponsive).
    const list = (slot: Slot) => {
      if (slots.includes(slot) || this.stopped || slot.leaving) return;
      const at = slots.findIndex((s) => s.index > slot.index);
      slots.splice(at === -1 ? slots.length : at, 0, slot);
      this.changed(network);
    };
    await Promise.all([
      ...removed.map((slot) => this.retire(slot)),
      // Listed by now, or at last; told again once attached (a devnet may reach it through a new front then).
      ...added.map((slot) =>
        this.launch(slot, () => list(slot)).finally(() =>
          slots.includes(slot) ? this.changed(network) : list(slot),
        ),
      ),
    ]);
  }

  /** Kills a member's process outright (fault injection); the controller sees it die and restarts it. */
  kill(network: string, member: string): boolean {
    const slot = this.find(network, member);
    if (!slot?.process || slot.process.exited) return false;
    slot.process.kill();
    return true;
  }

  onChange(listener: (network: string) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Starts the slot's process; `answering` is called once it answers, before it is attached. */
  private async launch(slot: Slot, answering?: () => void): Promise<void> {
    const network = slot.network.name;
    const log = { network, member: slot.name };
    let started: MemberProcess | undefined;
    try {
      const dataDir = resolve(this.options.dataDir, "nodes", slot.name);
      await mkdir(dataDir, { recursive: true });
      const prepared = (await this.options.prepare?.({ name: slot.name, network, dataDir })) ?? {};
      const command = fillCommand(slot.network.nodes.command, {
        ...this.options.placeholders,
        ...prepared,
        port: String(slot.port),
        name: slot.name,
        index: String(slot.index),
        dataDir,
        network,
        chainId: String(slot.network.chainId),
        anvil: anvilBinary,
      });
      slot.startedAt = Date.now();
      started = await startMemberProcess({
        name: slot.name,
        command,
        httpUrl: slot.httpUrl,
        logger: this.options.logger,
        startTimeoutMs: slot.network.nodes.startTimeout,
        onExit: (code, signal) => {
          if (started === undefined || slot.process !== started || slot.leaving || slot.restarting) return;
          this.logger.warn({ ...log, code, signal }, "member exited; the controller decides on a restart");
          this.changed(network);
        },
      });
    } catch (error) {
      this.logger.error({ ...log, err: messageOf(error) }, "member failed to start");
      return;
    }
    if (this.stopped || slot.leaving) {
      await started.stop();
      return;
    }
    slot.process = started;
    this.logger.info({ ...log, url: slot.httpUrl, pid: started.child.pid }, "member started");
    answering?.();
    const kill = started.kill;
    try {
      await this.options.onStarted?.({
        name: slot.name,
        network,
        httpUrl: slot.httpUrl,
        wsUrl: slot.httpUrl.replace(/^http/, "ws"),
        kill,
      });
    } catch (error) {
      // Scaled away (or the fleet stopped) while being attached: it was detached on the way out, nothing is wrong.
      if (this.stopped || slot.leaving)
        this.logger.debug({ ...log, err: messageOf(error) }, "member left while being attached");
      else this.logger.error({ ...log, err: messageOf(error) }, "member started but could not be attached");
    }
  }

  private async stopProcess(slot: Slot): Promise<void> {
    this.options.onStopping?.({ name: slot.name, network: slot.network.name });
    const running = slot.process;
    slot.process = undefined;
    await running?.stop();
  }

  private async retire(slot: Slot): Promise<void> {
    slot.leaving = true;
    await this.stopProcess(slot);
  }

  private find(network: string, member: string): Slot | undefined {
    return this.slots.get(network)?.find((s) => s.name === member);
  }

  private changed(network: string): void {
    for (const listener of this.listeners) listener(network);
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
