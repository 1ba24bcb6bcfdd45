import type { PeerTrail } from "./referenceTracker.js";
import type { NetworkHealthState, NodeState, ReferenceHead } from "./types.js";

/**
 * The engine's memory between rounds, handed to callers as the opaque NetworkHealthState. Every round builds a new
 * memory; the previous one is never mutated, so replaying a round is harmless.
 */
export interface EngineMemory {
  readonly version: 2;
  /** The last adopted reference head (kept while peers disagree or are unreachable). */
  readonly reference?: ReferenceHead;
  /** When the reference number last increased (peer halt detection). */
  readonly referenceAdvancedAt?: number;
  /** When peers last agreed on a head (quorum); disagreement is tolerated briefly. */
  readonly quorumAt?: number;
  /** Hashes of the reference's chain at its recent heights (replay or reorg). */
  readonly referenceChain?: ReadonlyMap<number, string>;
  /** Each reserved peer's last plausible head and when it was seen (the velocity gate's anchor per peer). */
  readonly peerTrails?: ReadonlyMap<string, PeerTrail>;
  /** The reference's number before it last rose (which blocks of it may still be on their way to the nodes). */
  readonly priorReference?: number;
  /** When the current systemic episode began (bounds the fail-static hold). */
  readonly failStaticSince?: number;
  /** Per-node memory in the order the nodes were observed; `names[i]` is the node of `nodes[i]`. */
  readonly names: ReadonlyArray<string>;
  readonly nodes: ReadonlyArray<NodeMemory>;
}

export interface NodeMemory {
  readonly state: NodeState;
  /** When `state` was entered. */
  readonly since: number;
  /** The incarnation this memory belongs to; a new startedAt resets it. */
  readonly startedAt: number;
  /** Reached Healthy in this incarnation (ends the startup grace early). */
  readonly caughtUp: boolean;
  /**
   * Answered in step with the reference in this incarnation, on its own probe (not trusted from routing as `caughtUp`
   * is on a cold start): a head at height 0 is then genesis it synced to, and a head stuck there a stall.
   */
  readonly inStep?: boolean;
  readonly goodStreak: number;
  readonly badStreak: number;
  /** The routing the engine last asked for (used when the observation carries no `routed`). */
  readonly routed: boolean;
  /** Last head number seen, and since when the stall clock runs (reset whenever the head moves or is not behind). */
  readonly headNumber?: number;
  readonly stallClockFrom: number;
  /** The smallest gap to the reference (blocks) seen in this incarnation, and when it was reached: progress. */
  readonly closestGap?: number;
  readonly closestGapAt?: number;
  /** Since when the node has continuously been in the restart tier. */
  readonly restartTierSince?: number;
  /** A restart decision not yet reflected by the backend. */
  readonly restartIssuedAt?: number;
  /** CrashLoop is sticky until the node is Healthy again; it survives incarnations. */
  readonly crashLoop: boolean;
  /** Restarts at or before this time do not count towards a new crash loop (the node was Healthy since). */
  readonly crashLoopClearedAt?: number;
}

const EMPTY: EngineMemory = { version: 2, names: [], nodes: [] };

/** Reads the previous round's memory; anything else (absent, foreign, older format) starts afresh. */
export function readMemory(state: NetworkHealthState | undefined): EngineMemory {
  const memory = state as Partial<EngineMemory> | undefined;
  if (!memory || memory.version !== 2 || !Array.isArray(memory.names) || !Array.isArray(memory.nodes))
    return EMPTY;
  return memory as EngineMemory;
}

/**
 * Finds a node's memory. The fleet lists its members in the same order round after round, so the node at the same
 * position is tried first (no hashing); a name index is built only when the order changed.
 */
export class NodeMemoryLookup {
  private index: Map<string, NodeMemory> | undefined;

  constructor(private readonly memory: EngineMemory) {}

  get(name: string, position: number): NodeMemory | undefined {
    if (this.memory.names[position] === name) return this.memory.nodes[position];
    this.index ??= new Map(this.memory.names.map((n, i) => [n, this.memory.nodes[i]!]));
    return this.index.get(name);
  }
}

export function toState(memory: EngineMemory): NetworkHealthState {
  return memory as unknown as NetworkHealthState;
}
