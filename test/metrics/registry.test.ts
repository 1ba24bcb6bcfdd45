import { createRequire } from "node:module";
import type * as PerfHooks from "node:perf_hooks";
import { afterEach, describe, expect, it, vi } from "vitest";
import { EVENT_LOOP_SAMPLE_MS, createRegistry } from "../../src/metrics/registry.js";

// prom-client takes perf_hooks through require, so the spy goes on that module object.
const perfHooks = createRequire(import.meta.url)("node:perf_hooks") as typeof PerfHooks;

afterEach(() => vi.restoreAllMocks());

describe("createRegistry", () => {
  it("samples the event loop's delay every 100 ms, not prom-client's 10 ms that wakes an idle process 100 times a second", () => {
    const monitor = vi.spyOn(perfHooks, "monitorEventLoopDelay");
    const registry = createRegistry();
    expect(monitor).toHaveBeenCalledTimes(1);
    expect(monitor.mock.calls[0]![0]).toEqual({ resolution: EVENT_LOOP_SAMPLE_MS });
    expect(EVENT_LOOP_SAMPLE_MS).toBeGreaterThanOrEqual(100);
    // The lag metrics are still there.
    expect(registry.getSingleMetric("lightfleet_nodejs_eventloop_lag_p99_seconds")).toBeDefined();
  });
});
