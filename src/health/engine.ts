import { NodeMemoryLookup, readMemory, toState, type EngineMemory, type NodeMemory } from "./engineMemory.js";
import { nextStallClock } from "./headProgress.js";
import { countProbe, nextState } from "./hysteresis.js";
import { coldStart, newIncarnation, pendingRestart } from "./nodeLifecycle.js";
import {
  assessNode,
  assessUnanswered,
  silenceLimitMs,
  type ConditionContext,
  type NodeCondition,
} from "./nodeCondition.js";
import { deliveryAllowanceMs, deliveryWindow, priorReference } from "./lagOnset.js";
import { referenceHashAt } from "./referenceHead.js";
import { trackReference, type ReferenceRound } from "./referenceTracker.js";
import { planRestarts, type RestartCandidate, type RestartPlan } from "./restartPlanner.js";
import { describeStatus } from "./statusMessage.js";
import {
  decideFailStatic,
  isPoolMostlyBad,
  type FailStaticRound,
  type PoolTurn,
  type SystemicProblem,
} from "./systemic.js";
import type {
  Decision,
  EngineInput,
  EngineOutput,
  NetworkParams,
  NodeState,
  NodeStatus,
  ReferenceHead,
} from "./types.js";

export class EngineInputError extends Error {
  override name = "EngineInputError";
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

const RESTART_TIER_STATES: ReadonlySet<NodeState> = new Set(["Lagging", "Unresponsive", "Diverged"]);

/**
 * One evaluation round of one network's pool: (observations, previous state, config, clock) to (new state, node
 * statuses, decisions). Pure and deterministic; hand `state` back as `previous` next round.
 *
 * It runs as named passes over the nodes, in arrays indexed like `input.nodes` (no per-node objects beyond the
 * memory each node needs anyway): the reference, what each probe says, whether the pool fails static, each node's
 * state and restart candidacy, the restart plan, and the statuses and decisions that follow.
 */
export function evaluateNetwork(input: EngineInput): EngineOutput {
  const { now, network } = input;
  if (!Number.isFinite(now)) throw new EngineInputError(`now must be a finite clock time in ms (got ${now})`);
  const memory = readMemory(input.previous);
  const ref = trackReference(input.peers, network, memory, now);
  const prior = priorReference(memory.reference, ref.reference, memory.priorReference);
  const round = observeNodes(input, memory, ref.reference, prior);
  const failStatic = decideFailStatic(
    ref.problem ?? poolMostlyBad(round.turn, network.health.systemicBadFraction),
    memory.failStaticSince,
    now,
    network.health.failStaticMaxHold,
  );
  const holding = failStatic.hold !== undefined;
  const candidates = judgeStates(round, input, holding);
  const plan = holding ? undefined : planRestarts(candidates, round.inFlightCount, network.health, now);
  const report = applyPlan(round, input, plan, failStatic.hold?.message);
  const duplicate = findDuplicate(report.names, memory.names);
  if (duplicate !== undefined) throw new EngineInputError(`duplicate node name ${JSON.stringify(duplicate)}`);
  return assembleOutput(input, ref, prior, round, report, failStatic);
}

/** What pass 1 learns of every node, by index, and of the pool. */
interface ObservedRound {
  bases: NodeMemory[];
  befores: Array<NodeState | undefined>;
  conditions: NodeCondition[];
  inFlight: boolean[];
  /** Each node's next memory: created here, completed by the later passes (new this round, so the engine stays pure). */
  nexts: Array<Mutable<NodeMemory>>;
  turn: PoolTurn;
  inFlightCount: number;
}

/** Pass 1: each node's memory carried over (or started), this probe's condition, streaks, and the pool's turn. */
function observeNodes(
  input: EngineInput,
  memory: EngineMemory,
  reference: ReferenceHead | undefined,
  prior: number | undefined,
): ObservedRound {
  const { now, network, peers, nodes } = input;
  const { health } = network;
  const settledHashes = new Map<number, string | undefined>();
  const context: ConditionContext = {
    chainId: network.chainId,
    health,
    reference,
    peersHashAt: (height) => {
      if (!settledHashes.has(height))
        settledHashes.set(height, referenceHashAt(peers, reference?.peers ?? [], height));
      return settledHashes.get(height);
    },
    now,
    silenceLimit: silenceLimitMs(network.blockTimeMs, health),
    delivery: deliveryWindow(
      reference,
      prior,
      now,
      deliveryAllowanceMs(network.blockTimeMs),
      network.blockTimeMs,
    ),
    blockTimeMs: network.blockTimeMs,
  };
  const count = nodes.length;
  const lookup = new NodeMemoryLookup(memory);
  // Locals in the loop, gathered into the round at the end: this loop runs for every node every round.
  const bases: NodeMemory[] = new Array(count);
  const befores: Array<NodeState | undefined> = new Array(count);
  const conditions: NodeCondition[] = new Array(count);
  const inFlight: boolean[] = new Array(count);
  const nexts: Array<Mutable<NodeMemory>> = new Array(count);
  let established = 0;
  let turningBad = 0;
  let keepingUp = 0;
  let inFlightCount = 0;
  for (let i = 0; i < count; i++) {
    const obs = nodes[i]!;
    const previous = lookup.get(obs.name, i);
    const base =
      previous === undefined
        ? coldStart(obs, now, health.healthyAfter)
        : previous.startedAt === obs.startedAt
          ? previous
          : newIncarnation(previous, obs, now);
    const stallClockFrom = nextStallClock(base, obs.head, reference?.number, now);
    const condition =
      obs.unansweredSince === undefined
        ? assessNode(obs, stallClockFrom, context, base.inStep)
        : assessUnanswered(obs.unansweredSince, base.headNumber, context);
    // A round without evidence (probe outstanding, not for long) counts neither way.
    const evidence = condition.tier !== "none";
    const good = condition.tier === "ok";
    const gap =
      reference !== undefined && obs.head !== undefined ? reference.number - obs.head.number : undefined;
    const closer = gap !== undefined && (base.closestGap === undefined || gap < base.closestGap);
    const restartIssuedAt = pendingRestart(base.restartIssuedAt, obs, now, health.restartBackoffBase);
    const restarting = obs.restartInFlight === true || restartIssuedAt !== undefined;
    if (restarting) inFlightCount++;
    else if (base.state !== "Starting" && base.state !== "Restarting") {
      established++;
      if (base.state === "Healthy" && !good && evidence) turningBad++;
    }
    if (good && reference !== undefined) keepingUp++;
    bases[i] = base;
    befores[i] = previous?.state;
    conditions[i] = condition;
    inFlight[i] = restarting;
    nexts[i] = {
      state: base.state,
      since: base.since,
      startedAt: obs.startedAt,
      caughtUp: base.caughtUp,
      inStep: base.inStep === true || (good && reference !== undefined),
      goodStreak: evidence ? countProbe(base.goodStreak, good, health.healthyAfter) : base.goodStreak,
      badStreak: evidence ? countProbe(base.badStreak, !good, health.unhealthyAfter) : base.badStreak,
      routed: base.routed,
      headNumber: obs.head?.number ?? base.headNumber,
      closestGap: closer ? gap : base.closestGap,
      closestGapAt: closer ? now : base.closestGapAt,
      stallClockFrom,
      restartTierSince: undefined,
      restartIssuedAt,
      crashLoop: base.crashLoop,
      crashLoopClearedAt: base.crashLoopClearedAt,
    };
  }
  const round: ObservedRound = {
    bases,
    befores,
    conditions,
    inFlight,
    nexts,
    turn: { established, turningBad, keepingUp },
    inFlightCount,
  };
  return round;
}

/**
 * When the node's restart clock started, if it runs. It does not run while the pool holds (restart timers start over
 * afterwards) nor while Starting; an outstanding probe neither starts nor stops it (the next answer, or silence,
 * decides); a stall counts from when the head stopped.
 */
function restartClock(
  base: NodeMemory,
  next: NodeMemory,
  condition: NodeCondition,
  state: NodeState,
  holding: boolean,
  now: number,
): number | undefined {
  if (holding) return undefined;
  if (condition.tier === "none") return base.restartTierSince;
  if (condition.tier !== "restart" || state === "Starting") return undefined;
  return base.restartTierSince ?? (condition.kind === "stall" ? next.stallClockFrom : now);
}

/** A (re)started node that closed on the reference this recently is still making progress. */
export function progressWindowMs(network: NetworkParams): number {
  return 3 * Math.max(network.blockTimeMs, network.health.probeInterval);
}

/** The startup grace is extended this many times over, at most, while a node closes on the reference. */
export const MAX_GRACE_FACTOR = 3;

/**
 * Whether a node that has not been Healthy in this incarnation is still within its startup grace: `startupGrace` from
 * its start, and past it while it keeps closing the gap to the reference (a node replaying its chain is recovering,
 * not lagging), up to MAX_GRACE_FACTOR times the grace so a node that never catches up is still acted on.
 */
export function inGrace(
  node: Pick<NodeMemory, "startedAt" | "closestGapAt">,
  now: number,
  network: NetworkParams,
): boolean {
  const { startupGrace } = network.health;
  if (now < node.startedAt + startupGrace) return true;
  const closing = node.closestGapAt !== undefined && now - node.closestGapAt < progressWindowMs(network);
  return closing && now < node.startedAt + MAX_GRACE_FACTOR * startupGrace;
}

/** The pool-side systemic cause: most of the pool turned bad at once and no node keeps up with the peers. */
function poolMostlyBad(turn: PoolTurn, systemicBadFraction: number): SystemicProblem | undefined {
  if (!isPoolMostlyBad(turn, systemicBadFraction)) return undefined;
  return {
    cause: "pool-mostly-bad",
    message: `${turn.turningBad} of ${turn.established} established nodes turned bad at once and none keeps up with the peers`,
  };
}

/**
 * Pass 2: each node's next state (kept as it was while the pool holds, or while its probe is outstanding), its restart
 * clock, and whether it is due for a restart.
 */
function judgeStates(round: ObservedRound, input: EngineInput, holding: boolean): RestartCandidate[] {
  const { now, nodes } = input;
  const { health } = input.network;
  const candidates: RestartCandidate[] = [];
  for (let i = 0; i < nodes.length; i++) {
    const base = round.bases[i]!;
    const next = round.nexts[i]!;
    const condition = round.conditions[i]!;
    // A restart that is no longer in flight (done under the same start time, or refused and to be retried) starts over.
    const resolvedPrevious: NodeState = base.state === "Restarting" ? "Starting" : base.state;
    const awaiting = condition.tier === "none";
    let state: NodeState;
    if (round.inFlight[i]) state = "Restarting";
    else if (holding || awaiting) state = resolvedPrevious;
    else {
      const inStartupGrace = !base.caughtUp && inGrace(next, now, input.network);
      state = nextState(
        { previous: resolvedPrevious, streaks: next, condition, inStartupGrace, crashLoop: base.crashLoop },
        health,
      );
    }
    next.state = state;
    const since = restartClock(base, next, condition, state, holding, now);
    next.restartTierSince = since;
    if (
      !awaiting &&
      since !== undefined &&
      RESTART_TIER_STATES.has(state) &&
      now - since >= health.restartAfter &&
      !base.crashLoop
    ) {
      const obs = nodes[i]!;
      candidates.push({
        name: obs.name,
        reason: condition.restartReason!,
        dueSince: since,
        restarts: obs.restarts,
        crashLoopClearedAt: base.crashLoopClearedAt,
      });
    }
  }
  return candidates;
}

interface RoundReport {
  statuses: NodeStatus[];
  decisions: Decision[];
  names: string[];
}

/** Pass 3: the restart plan applied, then each node's routing, status and decisions. */
function applyPlan(
  round: ObservedRound,
  input: EngineInput,
  plan: RestartPlan | undefined,
  holdMessage: string | undefined,
): RoundReport {
  const { now, nodes } = input;
  const { health } = input.network;
  const restartNow = new Map(plan?.restart.map((p) => [p.name, p.reason]));
  const crashLoopNow = new Set(plan?.crashLoop);
  const held = plan?.held ?? new Map<string, string>();
  const count = nodes.length;
  const report: RoundReport = { statuses: new Array(count), decisions: [], names: new Array(count) };
  for (let i = 0; i < count; i++) {
    const obs = nodes[i]!;
    const base = round.bases[i]!;
    const next = round.nexts[i]!;
    const before = round.befores[i];
    const condition = round.conditions[i]!;
    const name = obs.name;
    const restartReason = restartNow.size > 0 ? restartNow.get(name) : undefined;
    if (restartReason) {
      next.state = "Restarting";
      next.restartIssuedAt = now;
    } else if (crashLoopNow.size > 0 && crashLoopNow.has(name)) {
      next.state = "CrashLoop";
    }
    const state = next.state;
    if (state === "Healthy") {
      next.caughtUp = true;
      if (base.crashLoop) next.crashLoopClearedAt = now;
      next.crashLoop = false;
    } else if (state === "CrashLoop") {
      next.crashLoop = true;
    }
    const currentRouted = obs.routed ?? base.routed;
    const routed = holdMessage !== undefined ? currentRouted : state === "Healthy";
    next.routed = routed;
    next.since = state === before ? base.since : now;
    const message = describeStatus(
      state,
      obs,
      next,
      condition,
      holdMessage,
      held.size > 0 ? held.get(name) : undefined,
      health.unhealthyAfter,
      health.healthyAfter,
      state === "Starting" &&
        next.closestGapAt !== undefined &&
        now - next.closestGapAt < progressWindowMs(input.network),
    );
    report.statuses[i] = {
      name,
      state,
      routed,
      head: obs.head?.number,
      lagBlocks: condition.lagBlocks,
      lagSeconds: condition.lagSeconds,
      reason: condition.kind,
      message,
      since: next.since,
    };
    if (state !== before)
      report.decisions.push({ kind: "transition", node: name, from: before, to: state, message });
    if (routed !== currentRouted) report.decisions.push({ kind: routed ? "route" : "unroute", node: name });
    if (restartReason) report.decisions.push({ kind: "restart", node: name, reason: restartReason });
    report.names[i] = name;
  }
  return report;
}

/** The round's output and the memory handed back as `previous` next round. */
function assembleOutput(
  input: EngineInput,
  ref: ReferenceRound,
  prior: number | undefined,
  round: ObservedRound,
  report: RoundReport,
  failStatic: FailStaticRound,
): EngineOutput {
  const { reference } = ref;
  const nextMemory: EngineMemory = {
    version: 2,
    reference,
    referenceAdvancedAt: ref.referenceAdvancedAt,
    quorumAt: ref.quorumAt,
    referenceChain: ref.referenceChain,
    peerTrails: ref.peerTrails,
    priorReference: prior,
    failStaticSince: failStatic.since,
    names: report.names,
    nodes: round.nexts,
  };
  const output: EngineOutput = {
    state: toState(nextMemory),
    reference,
    nodes: report.statuses,
    decisions: report.decisions,
  };
  let recheckAt = Infinity;
  for (const condition of round.conditions) recheckAt = Math.min(recheckAt, condition.recheckAt ?? Infinity);
  if (recheckAt !== Infinity) output.nextRoundAt = recheckAt;
  if (failStatic.hold) output.systemic = failStatic.hold;
  if (failStatic.released) output.failStaticReleased = failStatic.released;
  const settledDepth = input.network.health.settledDepth;
  if (reference && reference.number - settledDepth >= 0) output.checkHeight = reference.number - settledDepth;
  if (ref.ignored) {
    const { head, peers: by } = ref.ignored;
    output.ignoredReference = { number: head.number, hash: head.hash, peers: by, reason: "implausible-jump" };
  }
  return output;
}

/** Node names must be unique. The usual round lists the same names as the last one, which proves it cheaply. */
function findDuplicate(names: ReadonlyArray<string>, previous: ReadonlyArray<string>): string | undefined {
  if (names.length === previous.length && names.every((n, i) => n === previous[i])) return undefined;
  const seen = new Set<string>();
  return names.find((n) => seen.has(n) || !seen.add(n));
}
