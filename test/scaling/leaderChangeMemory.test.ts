import { describe, expect, it } from "vitest";
import { scalingSchema } from "../../src/config/sections/scaling.js";
import type { LightNodePool } from "../../src/kubernetes/api/crds.js";
import { poolNetwork } from "../../src/kubernetes/controller/poolNetworks.js";
import { poolHealthStatus } from "../../src/kubernetes/status/statusObjects.js";
import { silentLogger } from "../../src/log/logger.js";
import { poolScalingStatus } from "../../src/scaling/poolScalingStatus.js";
import { rateOf } from "../../src/scaling/rateReading.js";
import { Scaler } from "../../src/scaling/scaler.js";
import type { ScalingMemory } from "../../src/scaling/decideScale.js";

const WINDOW_MS = 300_000;
const healthy = (n: number) => ({
  nodes: Array.from({ length: n }, (_, i) => ({
    name: `light-${i}`,
    state: "Healthy" as const,
    routed: true,
    message: "",
    since: 0,
  })),
});

/** A leader's scaler on a pool of 4 whose rate (an immediate source, as Prometheus) needs only 1. */
function leader(
  clock: { now: number },
  initialMemory?: (network: string, current: number, now: number) => ScalingMemory | undefined,
) {
  let replicas = 4;
  const scaler = new Scaler({
    networks: [{ name: "eth/mainnet", scaling: scalingSchema.parse({ minReplicas: 1, maxReplicas: 8 }) }],
    fleet: { members: () => [], scale: async (_n, size) => void (replicas = size) },
    currentReplicas: () => replicas,
    source: () => ({ kind: "prometheus", read: async () => rateOf(10) }),
    clock: () => clock.now,
    logger: silentLogger(),
    ...(initialMemory ? { initialMemory } : {}),
  });
  return { scaler, replicas: () => replicas };
}

describe("the scale-down window over a change of leader", () => {
  it("a new leader with no memory of the pool waits a whole window before it scales down", async () => {
    const clock = { now: 10_000_000 };
    const { scaler, replicas } = leader(clock, (_network, current, now) => ({
      recommendations: [{ at: now, replicas: current }],
    }));
    expect(await scaler.round("eth/mainnet", healthy(4))).toMatchObject({ change: "hold", replicas: 4 });
    clock.now += WINDOW_MS - 1_000;
    await scaler.round("eth/mainnet", healthy(4));
    expect(replicas()).toBe(4);
    clock.now += 2_000;
    await scaler.round("eth/mainnet", healthy(4));
    expect(replicas()).toBe(1);
  });

  it("the window's recommendations go into the pool status and come back from it to the next leader", async () => {
    const clock = { now: 10_000_000 };
    // The old leader: a spike asked for 4 a minute ago, the rate now asks for 1.
    const old = leader(clock, () => ({ recommendations: [{ at: clock.now - 60_000, replicas: 4 }] }));
    const round = (await old.scaler.round("eth/mainnet", healthy(4)))!;
    const status = poolHealthStatus({
      generation: 1,
      output: { nodes: healthy(4).nodes, decisions: [] } as never,
      podsWithoutGate: [],
      previousConditions: [],
      now: clock.now,
      scaling: poolScalingStatus(round),
    });
    expect(status.scaleDownRecommendations).toEqual([
      { time: new Date(clock.now - 60_000).toISOString().replace(/\.\d{3}Z$/, "Z"), replicas: 4 },
      { time: new Date(clock.now).toISOString().replace(/\.\d{3}Z$/, "Z"), replicas: 1 },
    ]);

    // The next leader reads the pool (its status as the old leader wrote it) and keeps to the same window.
    const pool: LightNodePool = {
      apiVersion: "lightfleet.io/v1alpha1",
      kind: "LightNodePool",
      metadata: { name: "mainnet", namespace: "eth", generation: 1 },
      spec: {
        network: "mainnet",
        chainId: 1,
        workloadRef: { kind: "StatefulSet", name: "light" },
        selector: { matchLabels: { app: "light" } },
        reservedPeers: [{ http: "http://full-0:8545" }],
      },
      status,
    };
    const persisted = poolNetwork(pool).ref.scalingMemory;
    expect(persisted?.recommendations.map((r) => r.replicas)).toEqual([4, 1]);
    clock.now += 17_000;
    const next = leader(clock, () => persisted);
    expect(await next.scaler.round("eth/mainnet", healthy(4))).toMatchObject({ change: "hold", replicas: 4 });
    clock.now = clock.now - 17_000 - 60_000 + WINDOW_MS + 1_000;
    await next.scaler.round("eth/mainnet", healthy(4));
    expect(next.replicas()).toBe(1);
  });
});
