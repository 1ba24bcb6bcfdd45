import { readMemory, toState, type EngineMemory, type NodeMemory } from "./engineMemory.js";
import { trackHeadProgress, type HeadProgress } from "./headProgress.js";
import { nextState, nextStreaks } from "./hysteresis.js";
import { assessNode, type NodeCondition } from "./nodeCondition.js";
import { referenceHashAt } from "./referenceHead.js";
import { trackReference } from "./referenceTracker.js";
import { planRestarts, type RestartCandidate } from "./restartPlanner.js";
import { isPoolMostlyBad } from "./systemic.js";
import type { Decision, EngineInput, EngineOutput, NodeObservation, NodeState, NodeStatus } from "./types.js";

export class EngineInputError extends Error {
  override name = "EngineInputError";
}

/** Per node, what the first pass learns; the second pass needs the whole pool's picture (systemic) first. */
interface NodeRound {
  obs: NodeObservation;
  /** Memory carried into this round: cold-started or reset for a new incarnation. */
  base: NodeMemory;
  /** State before this round, for transitions (undefined for a node seen the first time). */
  before: NodeState | undefined;
  progress: HeadProgress;
  condition: NodeCondition;
  goodStreak: number;
  badStreak: number;
  inFlight: boolean;
  restartIssuedAt: number | undefined;
}

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

  // Pass 1: per-node condition and counters.
  const rounds: NodeRound[] = new Array(nodes.length);
  const seen = new Set<string>();
  let established = 0;
  let turningBad = 0;
  for (let i = 0; i < nodes.length; i++) {
    const obs = nodes[i]!;
    if (seen.has(obs.name)) throw new EngineInputError(`duplicate node name ${JSON.stringify(obs.name)}`);
    seen.add(obs.name);
    const previous = memory.nodes.get(obs.name);
    const base =
      previous === undefined
        ? coldStart(obs, now, health.healthyAfter)
        : previous.startedAt === obs.startedAt
          ? previous
          : newIncarnation(previous, obs, now);
    const progress = trackHeadProgress(base, obs.head, reference?.number, now);
    const condition = assessNode(obs, progress, conditionContext);
    const good = condition.tier === "ok";
    const streaks = nextStreaks(base, good);
    const restartIssuedAt = pendingRestart(base.restartIssuedAt, obs, now, health.restartBackoffBase);
    const inFlight = obs.restartInFlight === true || restartIssuedAt !== undefined;
    if (!inFlight && base.state !== "Starting" && base.state !== "Restarting") {
      established++;
      if (base.state === "Healthy" && !good) turningBad++;
    }
    rounds[i] = {
      obs,
      base,
      before: previous?.state,
      progress,
      condition,
      goodStreak: streaks.goodStreak,
      badStreak: streaks.badStreak,
      inFlight,
      restartIssuedAt,
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
  const states: NodeState[] = new Array(nodes.length);
  const tierSince: Array<number | undefined> = new Array(nodes.length);
  const candidates: RestartCandidate[] = [];
  let inFlightCount = 0;
  for (let i = 0; i < rounds.length; i++) {
    const r = rounds[i]!;
    if (r.inFlight) inFlightCount++;
    // A restart that is no longer in flight (done under the same start time, or refused and to be retried) starts over.
    const resolvedPrevious: NodeState = r.base.state === "Restarting" ? "Starting" : r.base.state;
    let state: NodeState;
    if (r.inFlight) state = "Restarting";
    else if (systemic) state = resolvedPrevious;
    else {
      const inStartupGrace = !r.base.caughtUp && now < r.obs.startedAt + health.startupGrace;
      state = nextState(
        {
          previous: resolvedPrevious,
          streaks: r,
          condition: r.condition,
          inStartupGrace,
          crashLoop: r.base.crashLoop,
        },
        health,
      );
    }
    states[i] = state;
    // The restart clock does not run while systemic (restart timers start over afterwards) nor while Starting.
    const since =
      systemic || r.condition.tier !== "restart" || state === "Starting"
        ? undefined
        : (r.base.restartTierSince ?? (r.condition.kind === "stall" ? r.progress.stallClockFrom : now));
    tierSince[i] = since;
    if (
      !systemic &&
      since !== undefined &&
      RESTART_TIER_STATES.has(state) &&
      now - since >= health.restartAfter &&
      !r.base.crashLoop
    ) {
      candidates.push({
        name: r.obs.name,
        reason: r.condition.restartReason!,
        dueSince: since,
        restarts: r.obs.restarts,
        crashLoopClearedAt: r.base.crashLoopClearedAt,
      });
    }
  }
  const plan = systemic ? undefined : planRestarts(candidates, inFlightCount, health, now);
  const restartNow = new Map(plan?.restart.map((p) => [p.name, p.reason]));
  const crashLoopNow = new Set(plan?.crashLoop);

  // Outputs and the next memory.
  const statuses: NodeStatus[] = new Array(rounds.length);
  const decisions: Decision[] = [];
  const nextNodes = new Map<string, NodeMemory>();
  for (let i = 0; i < rounds.length; i++) {
    const r = rounds[i]!;
    const name = r.obs.name;
    let state = states[i]!;
    let restartIssuedAt = r.restartIssuedAt;
    if (restartNow.has(name)) {
      state = "Restarting";
      restartIssuedAt = now;
    } else if (crashLoopNow.has(name)) {
      state = "CrashLoop";
    }
    const leftCrashLoop = state === "Healthy" && r.base.crashLoop;
    const crashLoop = state === "CrashLoop" || (r.base.crashLoop && state !== "Healthy");
    const currentRouted = r.obs.routed ?? r.base.routed;
    const routed = systemic ? currentRouted : state === "Healthy";
    const since = state === r.before ? r.base.since : now;
    const message = describe(
      state,
      r,
      systemic?.message,
      plan?.held.get(name),
      health.unhealthyAfter,
      health.healthyAfter,
    );
    const { condition } = r;
    statuses[i] = {
      name,
      state,
      routed,
      head: r.obs.head?.number,
      lagBlocks: condition.lagBlocks,
      lagSeconds: condition.lagSeconds,
      reason: condition.kind,
      message,
      since,
    };
    if (state !== r.before)
      decisions.push({ kind: "transition", node: name, from: r.before, to: state, message });
    if (routed !== currentRouted) decisions.push({ kind: routed ? "route" : "unroute", node: name });
    const restartReason = restartNow.get(name);
    if (restartReason) decisions.push({ kind: "restart", node: name, reason: restartReason });
    nextNodes.set(name, {
      state,
      since,
      startedAt: r.obs.startedAt,
      caughtUp: r.base.caughtUp || state === "Healthy",
      goodStreak: r.goodStreak,
      badStreak: r.badStreak,
      routed,
      headNumber: r.progress.headNumber,
      stallClockFrom: r.progress.stallClockFrom,
      restartTierSince: tierSince[i],
      restartIssuedAt,
      crashLoop,
      crashLoopClearedAt: leftCrashLoop ? now : r.base.crashLoopClearedAt,
    });
  }

  const nextMemory: EngineMemory = {
    version: 1,
    reference,
    referenceAdvancedAt: ref.referenceAdvancedAt,
    quorumAt: ref.quorumAt,
    nodes: nextNodes,
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

/** A node seen for the first time (or after a controller restart): trust the fleet's routing as the starting point. */
function coldStart(obs: NodeObservation, now: number, healthyAfter: number): NodeMemory {
  const routed = obs.routed === true;
  return {
    state: routed ? "Healthy" : "Starting",
    since: now,
    startedAt: obs.startedAt,
    caughtUp: routed,
    goodStreak: routed ? healthyAfter : 0,
    badStreak: 0,
    routed,
    stallClockFrom: now,
    crashLoop: false,
  };
}

/** A new incarnation (the node was restarted) starts over, but keeps its crash-loop standing and routing. */
function newIncarnation(previous: NodeMemory, obs: NodeObservation, now: number): NodeMemory {
  return {
    state: "Starting",
    since: now,
    startedAt: obs.startedAt,
    caughtUp: false,
    goodStreak: 0,
    badStreak: 0,
    routed: previous.routed,
    stallClockFrom: now,
    crashLoop: previous.crashLoop,
    crashLoopClearedAt: previous.crashLoopClearedAt,
  };
}

/** A restart the engine asked for counts as in flight until the backend shows it, or it is retried after a while. */
function pendingRestart(
  issuedAt: number | undefined,
  obs: NodeObservation,
  now: number,
  retryAfter: number,
): number | undefined {
  if (issuedAt === undefined) return undefined;
  if (obs.restartInFlight || obs.startedAt >= issuedAt || now - issuedAt >= retryAfter) return undefined;
  for (const r of obs.restarts) if (r.at >= issuedAt) return undefined;
  return issuedAt;
}

function describe(
  state: NodeState,
  r: NodeRound,
  systemic: string | undefined,
  held: string | undefined,
  unhealthyAfter: number,
  healthyAfter: number,
): string {
  const { condition } = r;
  let text: string;
  if (state === "Restarting") {
    text = r.obs.restartInFlight ? "restart in progress" : `restart requested: ${condition.message}`;
  } else if (state === "CrashLoop") {
    text = `restarted too often, no automatic restart until healthy: ${condition.message}`;
  } else if (state === "Healthy") {
    text =
      condition.tier === "ok"
        ? condition.message
        : `${r.badStreak}/${unhealthyAfter} bad probes: ${condition.message}`;
  } else if (condition.tier === "ok") {
    const phase = state === "Starting" ? "starting" : "recovering";
    text = `${phase}, ${r.goodStreak}/${healthyAfter} good probes: ${condition.message}`;
  } else if (state === "Starting") {
    text = `starting: ${condition.message}`;
  } else {
    text = condition.message;
  }
  if (held) text = `${text}; ${held}`;
  return systemic ? `systemic failure, state and routing kept (${systemic}); ${text}` : text;
}
