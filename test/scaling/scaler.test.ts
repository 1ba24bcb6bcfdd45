import { Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { scalingSchema } from "../../src/config/sections/scaling.js";
import type { EngineOutput, NodeState, NodeStatus } from "../../src/health/types.js";
import { createLogger } from "../../src/log/logger.js";
import { createScalingMetrics } from "../../src/metrics/scalingMetrics.js";
import { createRateSources } from "../../src/scaling/createRateSources.js";
import { Scaler } from "../../src/scaling/scaler.js";
import type { ScalingConflict } from "../../src/scaling/scalingConflicts.js";
import { waitFor } from "../support/waitFor.js";

function engine(
  states: NodeState[],
  systemic?: EngineOutput["systemic"],
): Pick<EngineOutput, "nodes" | "systemic"> {
  const nodes: NodeStatus[] = states.map((state, i) => ({
    name: `light-${i}`,
    state,
    routed: state === "Healthy",
    message: state,
    since: 0,
  }));
  return { nodes, ...(systemic ? { systemic } : {}) };
}

/** A pool of `replicas` nodes whose size follows every scale call, unless `refuse` is set. */
function setup(
  options: {
    scaling?: Record<string, unknown>;
    conflicts?: () => Promise<ScalingConflict[]>;
    /** The pool's size as the backend reports it; by default the size last set. */
    current?: () => Promise<number>;
  } = {},
) {
  const totals = new Map<string, number>();
  let now = 1_000_000;
  let replicas = 1;
  let refuse: string | undefined;
  const scaleCalls: number[] = [];
  const lines: Array<Record<string, unknown>> = [];
  const logger = createLogger({ level: "info", format: "json" }, {
    write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>),
  } as never);
  const registry = new Registry();
  const networks = [{ name: "mainnet", scaling: scalingSchema.parse(options.scaling ?? {}) }];
  const scaler = new Scaler({
    networks,
    fleet: {
      members: () => [],
      scale: async (_network, n) => {
        scaleCalls.push(n);
        if (refuse) throw new Error(refuse);
        replicas = n;
      },
    },
    currentReplicas: options.current ?? (() => replicas),
    source: createRateSources({ clock: () => now, gateway: { requestTotals: () => totals } }),
    ...(options.conflicts ? { conflicts: options.conflicts } : {}),
    clock: () => now,
    logger,
    metrics: createScalingMetrics(registry),
  });
  return {
    scaler,
    registry,
    lines,
    scaleCalls,
    serve: (n: number) => totals.set("mainnet", (totals.get("mainnet") ?? 0) + n),
    advance: (ms: number) => (now += ms),
    get replicas() {
      return replicas;
    },
    refuse: (message: string | undefined) => (refuse = message),
  };
}

async function metric(
  registry: Registry,
  name: string,
  labels = 'network="mainnet"',
): Promise<number | undefined> {
  const line = (await registry.metrics()).split("\n").find((l) => l.startsWith(`${name}{${labels}}`));
  return line === undefined ? undefined : Number(line.split(" ").at(-1));
}

describe("Scaler", () => {
  it("scales the fleet on the in-process gateway's counters and exports the decision", async () => {
    const t = setup();
    const first = await t.scaler.round("mainnet", engine(["Healthy"]));
    expect(first).toMatchObject({ change: "hold", held: "rate-unavailable", applied: false });
    expect(first!.reason).toContain("warming up");
    expect(
      await metric(
        t.registry,
        "lightfleet_scaling_source_errors_total",
        'network="mainnet",source="gateway"',
      ),
    ).toBe(undefined);

    t.serve(2_000);
    t.advance(10_000);
    const second = await t.scaler.round("mainnet", engine(["Healthy"]));
    expect(second).toMatchObject({
      change: "up",
      current: 1,
      replicas: 4,
      desired: 4,
      rate: 200,
      applied: true,
    });
    expect(t.replicas).toBe(4);
    expect(await metric(t.registry, "lightfleet_pool_request_rate")).toBe(200);
    expect(await metric(t.registry, "lightfleet_pool_desired_replicas")).toBe(4);
    expect(await metric(t.registry, "lightfleet_pool_min_replicas")).toBe(1);
    expect(
      await metric(t.registry, "lightfleet_pool_scale_events_total", 'network="mainnet",direction="up"'),
    ).toBe(1);
    expect(t.lines.at(-1)).toMatchObject({
      msg: "scaling decision",
      network: "mainnet",
      from: 1,
      to: 4,
      rate: 200,
    });
    expect(t.scaler.status("mainnet")).toBe(second);

    // A controller that stops leading exports nothing stale.
    t.scaler.forget();
    expect(t.scaler.status("mainnet")).toBeUndefined();
    expect(await metric(t.registry, "lightfleet_pool_request_rate")).toBeUndefined();
    expect(await metric(t.registry, "lightfleet_pool_desired_replicas")).toBeUndefined();
  });

  it("tells its resize listeners of every resize carried out, and of nothing else", async () => {
    const t = setup();
    const resized: Array<{ current: number; replicas: number }> = [];
    const unsubscribe = t.scaler.onResize((s) => resized.push({ current: s.current, replicas: s.replicas }));
    await t.scaler.round("mainnet", engine(["Healthy"]));
    t.serve(2_000);
    t.advance(10_000);
    await t.scaler.round("mainnet", engine(["Healthy"]));
    t.refuse("quota exceeded");
    t.serve(8_000);
    t.advance(10_000);
    await t.scaler.round("mainnet", engine(["Healthy"]));
    expect(resized).toEqual([{ current: 1, replicas: 4 }]);
    unsubscribe();
    t.refuse(undefined);
    await t.scaler.round("mainnet", engine(["Healthy"]));
    // Resized again, unheard.
    expect(t.replicas).toBeGreaterThan(4);
    expect(resized).toHaveLength(1);
  });

  it("tells its scaling listeners of a resize as it starts, before the fleet carries it out", async () => {
    const t = setup();
    const started: Array<{ replicas: number; callsBefore: number }> = [];
    t.scaler.onScaling((r) => started.push({ replicas: r.replicas, callsBefore: t.scaleCalls.length }));
    await t.scaler.round("mainnet", engine(["Healthy"]));
    t.serve(2_000);
    t.advance(10_000);
    await t.scaler.round("mainnet", engine(["Healthy"]));
    expect(started).toEqual([{ replicas: 4, callsBefore: 0 }]);
  });

  it("holds in a systemic failure and says so", async () => {
    const t = setup();
    await t.scaler.round("mainnet", engine(["Healthy"]));
    t.serve(5_000);
    t.advance(10_000);
    const status = await t.scaler.round(
      "mainnet",
      engine(["Lagging"], { cause: "no-peer-reachable", message: "no reserved peer answers" }),
    );
    expect(status).toMatchObject({ change: "hold", held: "systemic-failure", replicas: 1 });
    expect(t.scaleCalls).toEqual([]);
    expect(
      await metric(t.registry, "lightfleet_pool_scaling_held", 'network="mainnet",cause="systemic-failure"'),
    ).toBe(1);
  });

  it("counts and reports a failing source, and removes the stale rate", async () => {
    const t = setup({
      scaling: { source: { type: "prometheus", url: "http://127.0.0.1:1", timeout: "1s" } },
    });
    const status = await t.scaler.round("mainnet", engine(["Healthy"]));
    expect(status).toMatchObject({ held: "rate-unavailable", change: "hold" });
    expect(status!.reason).toMatch(
      /^request rate unavailable \(Prometheus query failed: .*\): no scale-down; holding 1$/,
    );
    expect(
      await metric(
        t.registry,
        "lightfleet_scaling_source_errors_total",
        'network="mainnet",source="prometheus"',
      ),
    ).toBe(1);
    expect(await metric(t.registry, "lightfleet_pool_request_rate")).toBeUndefined();
    expect(t.lines.at(-1)).toMatchObject({ level: 40, msg: "scaling decision" });
  });

  it("leaves the pool to another autoscaler, and to nobody when it cannot tell", async () => {
    let conflicts: ScalingConflict[] | Error = [{ kind: "ScaledObject", name: "mainnet-nodes" }];
    const t = setup({
      conflicts: () => (conflicts instanceof Error ? Promise.reject(conflicts) : Promise.resolve(conflicts)),
    });
    await t.scaler.round("mainnet", engine(["Healthy"]));
    t.serve(5_000);
    t.advance(10_000);
    const status = await t.scaler.round("mainnet", engine(["Healthy"]));
    expect(status).toMatchObject({ applied: false, replicas: 5, desired: 10 });
    expect(status!.conflict).toBe(
      "ScaledObject mainnet-nodes scales this workload; lightfleet leaves scaling to it",
    );
    expect(t.scaleCalls).toEqual([]);
    expect(
      await metric(t.registry, "lightfleet_pool_scaling_held", 'network="mainnet",cause="conflict"'),
    ).toBe(1);
    // The desired size is still exported: a KEDA ScaledObject may scale on it.
    expect(await metric(t.registry, "lightfleet_pool_desired_replicas")).toBe(10);

    conflicts = new Error("horizontalpodautoscalers is forbidden");
    const unknown = await t.scaler.round("mainnet", engine(["Healthy"]));
    expect(unknown!.conflict).toBe(
      "could not check for other autoscalers (horizontalpodautoscalers is forbidden); not scaling",
    );
    expect(t.scaleCalls).toEqual([]);

    conflicts = [];
    await t.scaler.round("mainnet", engine(["Healthy"]));
    expect(t.scaleCalls).toEqual([5]);
  });

  it("reports a failed scale call and asks again next round", async () => {
    const t = setup();
    await t.scaler.round("mainnet", engine(["Healthy"]));
    t.serve(1_000);
    t.advance(10_000);
    t.refuse("statefulsets.apps mainnet is forbidden");
    const failed = await t.scaler.round("mainnet", engine(["Healthy"]));
    expect(failed).toMatchObject({ applied: false, replicas: 2 });
    expect(failed!.reason).toContain("scaling failed: statefulsets.apps mainnet is forbidden");
    t.refuse(undefined);
    t.serve(1_000);
    t.advance(10_000);
    expect(await t.scaler.round("mainnet", engine(["Healthy"]))).toMatchObject({
      applied: true,
      replicas: 2,
    });
    expect(t.scaleCalls).toEqual([2, 2]);
  });

  it("evaluates and exports a pool with scaling disabled, but never resizes it", async () => {
    const t = setup({ scaling: { enabled: false } });
    await t.scaler.round("mainnet", engine(["Healthy"]));
    t.serve(1_500);
    t.advance(10_000);
    const status = await t.scaler.round("mainnet", engine(["Healthy"]));
    expect(status).toMatchObject({ applied: false, replicas: 3, desired: 3 });
    expect(status!.reason).toMatch(/^scaling disabled \(lightfleet would keep 3: 150 req\/s needs 3/);
    expect(t.scaleCalls).toEqual([]);
    // Repeated every round, the same decision is logged once.
    const logged = t.lines.length;
    await t.scaler.round("mainnet", engine(["Healthy"]));
    expect(t.lines.length).toBe(logged);
    expect(await metric(t.registry, "lightfleet_pool_request_rate")).toBe(150);
    expect(await metric(t.registry, "lightfleet_pool_desired_replicas")).toBe(3);
  });

  it("takes pools added, changed and removed while it runs", async () => {
    const t = setup();
    await t.scaler.round("mainnet", engine(["Healthy"]));
    t.serve(1_000);
    t.advance(10_000);
    await t.scaler.round("mainnet", engine(["Healthy"]));
    expect(await metric(t.registry, "lightfleet_pool_desired_replicas")).toBe(2);

    // mainnet now reads Prometheus (unreachable here); sepolia is new.
    t.scaler.setNetworks([
      {
        name: "mainnet",
        scaling: scalingSchema.parse({
          source: { type: "prometheus", url: "http://127.0.0.1:1", timeout: "1s" },
        }),
      },
      { name: "sepolia", scaling: scalingSchema.parse({ minReplicas: 2 }) },
    ]);
    const changed = await t.scaler.round("mainnet", engine(["Healthy", "Healthy"]));
    expect(changed).toMatchObject({ held: "rate-unavailable", replicas: 2 });
    expect(changed!.reason).toContain("Prometheus query failed");
    const added = await t.scaler.round("sepolia", engine(["Healthy", "Healthy"]));
    expect(added).toMatchObject({ network: "sepolia", floor: 2 });

    t.scaler.setNetworks([{ name: "sepolia", scaling: scalingSchema.parse({ minReplicas: 2 }) }]);
    expect(await t.scaler.round("mainnet", engine(["Healthy"]))).toBeUndefined();
    expect(t.scaler.status("mainnet")).toBeUndefined();
    expect(await metric(t.registry, "lightfleet_pool_desired_replicas")).toBeUndefined();
    expect(await metric(t.registry, "lightfleet_pool_min_replicas", 'network="sepolia"')).toBe(2);
  });

  it("asks for a round when a cron floor starts or ends (node-cron, in the floor's time zone)", async () => {
    const t = setup({
      scaling: {
        cronFloors: [{ start: "* * * * * *", end: "30 3 1 1 *", timezone: "Asia/Tokyo", minReplicas: 2 }],
      },
    });
    const asked: string[] = [];
    const stop = t.scaler.scheduleCronFloors((network) => asked.push(network));
    try {
      await waitFor(() => asked.length > 0, { timeoutMs: 5_000, what: "a floor change" });
      expect(asked[0]).toBe("mainnet");
    } finally {
      stop();
    }
  });

  it("runs rounds beside the health rounds: one per network at a time, failures reported, settled on stop", async () => {
    let open!: (replicas: number) => void;
    let gate = new Promise<number>((resolve) => (open = resolve));
    const t = setup({ current: () => gate });
    const errors: unknown[] = [];
    const first = t.scaler.roundBeside("mainnet", engine(["Healthy"]), (e) => errors.push(e));
    expect(first).toBeDefined();
    // The pool's previous round is still under way (reading its size hangs): nothing else starts.
    expect(t.scaler.roundBeside("mainnet", engine(["Healthy"]), (e) => errors.push(e))).toBeUndefined();
    let settled = false;
    const stopping = t.scaler.settled().then(() => (settled = true));
    await Promise.resolve();
    expect(settled).toBe(false);
    open(1);
    expect(await first).toMatchObject({ network: "mainnet" });
    await stopping;
    // A failing round never rejects: the error goes to the callback, and the next round may start.
    gate = Promise.reject(new Error("API down"));
    t.advance(2_000);
    const failing = t.scaler.roundBeside("mainnet", engine(["Healthy"]), (e) => errors.push(e));
    expect(await failing).toBeUndefined();
    expect(errors.map(String)).toEqual(["Error: API down"]);
    expect(t.scaler.roundBeside("mainnet", engine(["Healthy"]), (e) => errors.push(e))).toBeDefined();
  });
});
