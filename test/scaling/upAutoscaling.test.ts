import { PassThrough } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import type { UpComponent } from "../../src/up/component.js";
import { controllerComponent } from "../../src/up/controllerComponent.js";
import { devnetComponent } from "../../src/up/devnetComponent.js";
import { fleetComponent } from "../../src/up/fleetComponent.js";
import { startUp, type RunningUp } from "../../src/up/runUp.js";
import { scalingComponent } from "../../src/up/scalingComponent.js";
import { jsonLogLines } from "../support/jsonLogLines.js";
import { fastScaling, writeUpConfig } from "../support/upConfig.js";
import { waitFor } from "../support/waitFor.js";

/**
 * Stands in for the gateway's request counters (the `requestTotals()` the gateway exposes to `up`), so this test
 * proves the autoscaler's wiring with the real devnet, process fleet and controller.
 */
function countingGateway(): UpComponent & { load(perSecond: number): void; stopLoad(): void } {
  let total = 0;
  let timer: NodeJS.Timeout | undefined;
  return {
    name: "gateway counters",
    start(context) {
      context.gateway = { requestTotals: () => new Map([["alpha", total]]) };
      return Promise.resolve({ stop: () => Promise.resolve(clearInterval(timer)) });
    },
    load(perSecond) {
      clearInterval(timer);
      timer = setInterval(() => (total += perSecond / 10), 100);
    },
    stopLoad() {
      clearInterval(timer);
    },
  };
}

describe("autoscaling in lightfleet up", () => {
  const cleanup: Array<() => unknown> = [];
  afterEach(async () => {
    for (const fn of cleanup.splice(0).reverse()) await fn();
  });

  it("grows the pool under load, the new nodes turn Healthy, and shrinks it after the window", async () => {
    const config = writeUpConfig({
      fullNodes: 1,
      replicas: 1,
      scaling: fastScaling(20),
    });
    const gateway = countingGateway();
    const log = new PassThrough();
    const lines = jsonLogLines(log)();
    const up: RunningUp = await startUp({
      config,
      components: [devnetComponent, fleetComponent, controllerComponent, gateway, scalingComponent],
      stdout: log as unknown as NodeJS.WriteStream,
    });
    cleanup.push(() => up.stop());
    const { fleet, controller } = up.context;
    const healthy = () =>
      controller!.lastOutput("alpha")?.nodes.filter((n) => n.state === "Healthy").length ?? 0;
    await waitFor(() => healthy() === 1, { timeoutMs: 30_000, what: "the first node Healthy" });

    // 50 req/s at 20 per node needs 3 nodes (maxReplicas).
    gateway.load(50);
    await waitFor(() => fleet!.members("alpha").length === 3, {
      timeoutMs: 20_000,
      what: "the pool to grow to 3",
    });
    await waitFor(() => healthy() === 3, { timeoutMs: 30_000, what: "the new nodes to turn Healthy" });
    // Routing follows the engine's round, so the new nodes take traffic.
    await waitFor(() => fleet!.members("alpha").every((m) => m.routed), {
      timeoutMs: 5_000,
      what: "every node routed",
    });
    const up3 = lines.find((l) => l.msg === "scaling decision" && l.to === 3);
    expect(up3?.why).toMatch(/req\/s needs [3-9] at 20\/node/);

    // No more load: the rate falls to 0 within the 2 s window, the pool shrinks 3 s (the stabilization) later.
    gateway.stopLoad();
    const stoppedAt = Date.now();
    await waitFor(() => fleet!.members("alpha").length === 1, {
      timeoutMs: 20_000,
      what: "the pool to shrink to 1",
    });
    expect(Date.now() - stoppedAt).toBeGreaterThanOrEqual(3_000);
    // The decision is logged once the fleet has carried it out (the members leave the list before they stop).
    const downs = () =>
      lines.filter((l) => l.msg === "scaling decision" && (l.to as number) < (l.from as number));
    await waitFor(() => downs().at(-1)?.to === 1, { timeoutMs: 10_000, what: "the scale-down logged" });
    expect(downs()[0]).toMatchObject({ from: 3, network: "alpha", rate: 0 });
    await waitFor(() => healthy() === 1 && controller!.lastOutput("alpha")!.nodes.length === 1, {
      timeoutMs: 10_000,
      what: "one Healthy node left",
    });
    const metrics = await (await fetch(`${up.context.admin.url}/metrics`)).text();
    expect(metrics).toMatch(/lightfleet_pool_desired_replicas\{network="alpha"\} 1/);
    expect(metrics).toContain(
      `lightfleet_pool_scale_events_total{network="alpha",direction="down"} ${downs().length}`,
    );
  });
});
