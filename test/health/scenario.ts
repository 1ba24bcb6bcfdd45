import { networkSchema } from "../../src/config/sections/network.js";
import { evaluateNetwork } from "../../src/health/engine.js";
import type {
  EngineOutput,
  NetworkHealthState,
  NetworkParams,
  NodeObservation,
  NodeStatus,
  PeerObservation,
} from "../../src/health/types.js";
import type { BlockRef } from "../../src/chain/blockRef.js";

/**
 * A tiny world for engine scenarios: a canonical chain whose head follows an injected clock, peers and nodes built
 * from it, and a runner that feeds the engine round by round and hands its state back, like the controller does.
 */
export const T0 = 1_700_000_000_000;
export const CHAIN_ID = 1;

/** Block n of a chain; different chains (forks) have different hashes at the same height. */
export function block(n: number, chain = "main", blockSeconds = 12): BlockRef {
  return { number: n, hash: hashOf(n, chain), timestamp: 1_600_000_000 + n * blockSeconds };
}

export function hashOf(n: number, chain = "main"): string {
  return `0x${chain}-${n}`;
}

/** Hashes of the `depth` blocks below n. */
export function recentHashes(n: number, chain = "main", depth = 16): Map<number, string> {
  const hashes = new Map<number, string>();
  for (let h = Math.max(0, n - depth); h < n; h++) hashes.set(h, hashOf(h, chain));
  return hashes;
}

export function peer(
  name: string,
  head: number,
  options: Partial<PeerObservation> & { chain?: string; blockSeconds?: number } = {},
): PeerObservation {
  const { chain = "main", blockSeconds = 12, ...rest } = options;
  return {
    name,
    reachable: true,
    chainId: CHAIN_ID,
    head: block(head, chain, blockSeconds),
    recentHashes: recentHashes(head, chain),
    ...rest,
  };
}

export function node(
  name: string,
  head: number | undefined,
  options: Partial<NodeObservation> & { chain?: string; blockSeconds?: number } = {},
): NodeObservation {
  const { chain = "main", blockSeconds = 12, ...rest } = options;
  return {
    name,
    startedAt: T0 - 3_600_000,
    reachable: true,
    chainId: CHAIN_ID,
    head: head === undefined ? undefined : block(head, chain, blockSeconds),
    syncing: false,
    restarts: [],
    routed: true,
    ...rest,
  };
}

/** Network parameters through the real config schema, so the defaults under test are the shipped ones. */
export function networkParams(
  health: Record<string, unknown> = {},
  blockTime: string = "12s",
): NetworkParams {
  const parsed = networkSchema.parse({
    name: "testnet",
    chainId: CHAIN_ID,
    blockTime,
    reservedPeers: [{ name: "full-0", http: "http://127.0.0.1:1" }],
    health,
  });
  return {
    name: parsed.name,
    chainId: parsed.chainId,
    blockTimeMs: parsed.blockTimeMs,
    health: parsed.health,
  };
}

export interface RoundInput {
  peers: PeerObservation[];
  nodes: NodeObservation[];
}

export class Scenario {
  now = T0;
  previous: NetworkHealthState | undefined;
  readonly outputs: EngineOutput[] = [];
  /** Routing as a fleet would hold it after carrying out the decisions. */
  readonly routed = new Map<string, boolean>();

  constructor(readonly network: NetworkParams = networkParams()) {}

  /** One round at the current clock; routing decisions are applied to `routed` as the controller would. */
  round(input: RoundInput): EngineOutput {
    const nodes = input.nodes.map((n) =>
      this.routed.has(n.name) ? { ...n, routed: this.routed.get(n.name)! } : n,
    );
    const output = evaluateNetwork({
      now: this.now,
      network: this.network,
      ...input,
      nodes,
      previous: this.previous,
    });
    for (const d of output.decisions) {
      if (d.kind === "route") this.routed.set(d.node, true);
      if (d.kind === "unroute") this.routed.set(d.node, false);
    }
    for (const n of nodes) if (!this.routed.has(n.name)) this.routed.set(n.name, n.routed ?? false);
    this.previous = output.state;
    this.outputs.push(output);
    return output;
  }

  /** Advance the clock, then run a round. */
  after(ms: number, input: RoundInput): EngineOutput {
    this.now += ms;
    return this.round(input);
  }

  /** Run `count` rounds `every` ms apart; `build` sees the round index and the clock. */
  run(count: number, every: number, build: (i: number, now: number) => RoundInput): EngineOutput[] {
    const outputs: EngineOutput[] = [];
    for (let i = 0; i < count; i++) outputs.push(this.after(every, build(i, this.now + every)));
    return outputs;
  }
}

export function statusOf(output: EngineOutput, name: string): NodeStatus {
  const status = output.nodes.find((n) => n.name === name);
  if (!status) throw new Error(`no status for ${name}`);
  return status;
}

export function decisionsOf(output: EngineOutput, kind: string): string[] {
  return output.decisions.filter((d) => d.kind === kind).map((d) => d.node);
}

export function allDecisions(outputs: EngineOutput[], kind: string): string[] {
  return outputs.flatMap((o) => decisionsOf(o, kind));
}
