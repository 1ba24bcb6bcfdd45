import { NodeMemoryLookup, readMemory, toState, type EngineMemory, type NodeMemory } from "./engineMemory.js";
import { nextStallClock } from "./headProgress.js";
import { countProbe, nextState } from "./hysteresis.js";
import { coldStart, newIncarnation, pendingRestart } from "./nodeLifecycle.js";
import { assessNode, type NodeCondition } from "./nodeCondition.js";
import { referenceHashAt } from "./referenceHead.js";
import { trackReference } from "./referenceTracker.js";
import { planRestarts, type RestartCandidate } from "./restartPlanner.js";
import { describeStatus } from "./statusMessage.js";
import { isPoolMostlyBad } from "./systemic.js";
import type { Decision, EngineInput, EngineOutput, NodeState, NodeStatus } from "./types.js";

export class EngineInputError extends Error {
  override name = "EngineInputError";
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

const RESTART_TIER_STATES: ReadonlySet<NodeState> = new Set(["Lagging", "Unresponsive", "Diverged"]);

/**
 * One evaluation round of one network's pool: (observations, previous state, config, clock) to (new state, node
 * statuses, decisions). Pure and deterministic; hand `state` back as `previous` next round.
 */
export function evaluateNetwork(input: EngineInput): EngineOutput {
  const { now, network, peers, nodes } = input;
  const { health } = network;
  if (!Number.isFinite(now)) throw new EngineInputError(`now must be a finite clock time in ms (got ${now})`);
  const memory = readMemory(input.previous);

  const ref = trackReference(peers, network, memory, now);
  const reference = ref.reference;
  const settledHashes = new Map<number, string | undefined>();
  const settledHashAt = (height: number): string | undefined => {
    if (!settledHashes.has(height))
      settledHashes.set(height, referenceHashAt(peers, reference?.peers ?? [], height));
    return settledHashes.get(height);
  };
  const conditionContext = { chainId: network.chainId, health, reference, settledHashAt, now };

  // Pass 1: per-node condition and counters. Each node's next memory is created here and completed by the later
  // passes (it is new this round, so filling it in keeps the engine pure), which saves an allocation per node.
  const count = nodes.length;
  const lookup = new NodeMemoryLookup(memory);
  const bases: NodeMemory[] = new Array(count);
  const befores: Array<NodeState | undefined> = new Array(count);
  const conditions: NodeCondition[] = new Array(count);
  const inFlight: boolean[] = new Array(count);
  const nexts: Array<Mutable<NodeMemory>> = new Array(count);
  let established = 0;
  let turningBad = 0;
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
    const condition = assessNode(obs, stallClockFrom, conditionContext);
    const good = condition.tier === "ok";
    const restartIssuedAt = pendingRestart(base.restartIssuedAt, obs, now, health.restartBackoffBase);
    const restarting = obs.restartInFlight === true || restartIssuedAt !== undefined;
    if (!restarting && base.state !== "Starting" && base.state !== "Restarting") {
      established++;
      if (base.state === "Healthy" && !good) turningBad++;
    }
    bases[i] = base;
    befores[i] = previous?.state;
    conditions[i] = condition;
    inFlight[i] = restarting;
    nexts[i] = {
      state: base.state,
      since: base.since,
      startedAt: obs.startedAt,
      caughtUp: base.caughtUp,
      goodStreak: countProbe(base.goodStreak, good, health.healthyAfter),
      badStreak: countProbe(base.badStreak, !good, health.unhealthyAfter),
      routed: base.routed,
      headNumber: obs.head?.number ?? base.headNumber,
      stallClockFrom,
      restartTierSince: undefined,
      restartIssuedAt,
      crashLoop: base.crashLoop,
      crashLoopClearedAt: base.crashLoopClearedAt,
    };
  }

  const systemic =
    ref.problem ??
    (isPoolMostlyBad({ established, turningBad }, health.systemicBadFraction)
      ? {
          cause: "pool-mostly-bad" as const,
          message: `${turningBad} of ${established} established nodes turned bad at once`,
        }
      : undefined);

  // Pass 2: states (frozen while systemic), restart candidates.
  const candidates: RestartCandidate[] = [];
  let inFlightCount = 0;
  for (let i = 0; i < count; i++) {
    const base = bases[i]!;
    const next = nexts[i]!;
    const condition = conditions[i]!;
    if (inFlight[i]) inFlightCount++;
    // A restart that is no longer in flight (done under the same start time, or refused and to be retried) starts over.
    const resolvedPrevious: NodeState = base.state === "Restarting" ? "Starting" : base.state;
    let state: NodeState;
    if (inFlight[i]) state = "Restarting";
    else if (systemic) state = resolvedPrevious;
    else {
      const inStartupGrace = !base.caughtUp && now < next.startedAt + health.startupGrace;
      state = nextState(
        { previous: resolvedPrevious, streaks: next, condition, inStartupGrace, crashLoop: base.crashLoop },
        health,
      );
    }
    next.state = state;
    // The restart clock does not run while systemic (restart timers start over afterwards) nor while Starting.
    const since =
      systemic || condition.tier !== "restart" || state === "Starting"
        ? undefined
        : (base.restartTierSince ?? (condition.kind === "stall" ? next.stallClockFrom : now));
    next.restartTierSince = since;
    if (
      !systemic &&
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
  const plan = systemic ? undefined : planRestarts(candidates, inFlightCount, health, now);
  const restartNow = new Map(plan?.restart.map((p) => [p.name, p.reason]));
  const crashLoopNow = new Set(plan?.crashLoop);
  const held = plan?.held ?? new Map<string, string>();

  // Pass 3: the plan applied, statuses, decisions.
  const statuses: NodeStatus[] = new Array(count);
  const decisions: Decision[] = [];
  const names: string[] = new Array(count);
  for (let i = 0; i < count; i++) {
    const obs = nodes[i]!;
    const base = bases[i]!;
    const next = nexts[i]!;
    const before = befores[i];
    const condition = conditions[i]!;
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
    const routed = systemic ? currentRouted : state === "Healthy";
    next.routed = routed;
    next.since = state === before ? base.since : now;
    const message = describeStatus(
      state,
      obs,
      next,
      condition,
      systemic?.message,
      held.size > 0 ? held.get(name) : undefined,
      health.unhealthyAfter,
      health.healthyAfter,
    );
    statuses[i] = {
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
      decisions.push({ kind: "transition", node: name, from: before, to: state, message });
    if (routed !== currentRouted) decisions.push({ kind: routed ? "route" : "unroute", node: name });
    if (restartReason) decisions.push({ kind: "restart", node: name, reason: restartReason });
    names[i] = name;
  }

  const duplicate = findDuplicate(names, memory.names);
  if (duplicate !== undefined) throw new EngineInputError(`duplicate node name ${JSON.stringify(duplicate)}`);

  const nextMemory: EngineMemory = {
    version: 2,
    reference,
    referenceAdvancedAt: ref.referenceAdvancedAt,
    quorumAt: ref.quorumAt,
    names,
    nodes: nexts,
  };
  const output: EngineOutput = { state: toState(nextMemory), reference, nodes: statuses, decisions };
  if (systemic) output.systemic = { cause: systemic.cause, message: systemic.message };
  if (reference && reference.number - health.settledDepth >= 0) {
    output.checkHeight = reference.number - health.settledDepth;
  }
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
