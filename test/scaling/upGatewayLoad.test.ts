import autocannon from "autocannon";
import { PassThrough } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import { startUp, type RunningUp } from "../../src/up/runUp.js";
import { jsonLogLines } from "../support/jsonLogLines.js";
import { fastScaling, writeUpConfig } from "../support/upConfig.js";
import { waitFor } from "../support/waitFor.js";

// A read the gateway forwards to a light node (eth_blockNumber it answers from its served head).
const GET_BALANCE = JSON.stringify({
  jsonrpc: "2.0",
  id: 1,
  method: "eth_getBalance",
  params: ["0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266", "latest"],
});

interface Load {
  done: Promise<autocannon.Result>;
  stop(): void;
}

/** eth_getBalance through the gateway at a fixed rate, for at most `seconds`; every answer must carry a result. */
function load(url: string, perSecond: number, seconds: number): Load {
  let instance: autocannon.Instance | undefined;
  const done = new Promise<autocannon.Result>((resolve, reject) => {
    instance = autocannon(
      {
        url,
        method: "POST",
        headers: { "content-type": "application/json" },
        body: GET_BALANCE,
        connections: 8,
        overallRate: perSecond,
        duration: seconds,
        verifyBody: (body) => {
          try {
            return typeof (JSON.parse(String(body)) as { result?: unknown }).result === "string";
          } catch {
            return false;
          }
        },
      },
      (error, result) => (error ? reject(error as Error) : resolve(result)),
    );
  });
  return { done, stop: () => instance?.stop() };
}

function failures(result: autocannon.Result): Record<string, number> {
  return {
    errors: result.errors,
    timeouts: result.timeouts,
    non2xx: result.non2xx,
    mismatches: result.mismatches,
  };
}

/** Calls the gateway sent to each light node that were answered, from its upstream counter. */
async function answeredByNode(adminUrl: string): Promise<Map<string, number>> {
  const text = await (await fetch(`${adminUrl}/metrics`)).text();
  const calls = new Map<string, number>();
  for (const line of text.split("\n")) {
    const match = /^lightfleet_gateway_upstream_requests_total\{(.*)\} (\S+)$/.exec(line);
    if (!match || !match[1]!.includes('outcome="ok"')) continue;
    const upstream = /upstream="([^"]+)"/.exec(match[1]!)?.[1];
    if (upstream) calls.set(upstream, (calls.get(upstream) ?? 0) + Number(match[2]));
  }
  return calls;
}

describe("autoscaling in lightfleet up under load through the gateway", () => {
  const cleanup: Array<() => unknown> = [];
  afterEach(async () => {
    for (const fn of cleanup.splice(0).reverse()) await fn();
  });

  it("grows the pool, new nodes turn Healthy and take traffic, shrinks when the load drops, no request fails", async () => {
    const config = writeUpConfig({
      fullNodes: 1,
      replicas: 1,
      scaling: fastScaling(80),
    });
    const log = new PassThrough();
    const lines = jsonLogLines(log)();
    const up: RunningUp = await startUp({ config, stdout: log as unknown as NodeJS.WriteStream });
    cleanup.push(() => up.stop());
    const { fleet, controller, admin } = up.context;
    const rpc = up.endpoints.find((e) => e.label === "alpha RPC")!.url;
    const healthy = () =>
      controller!.lastOutput("alpha")?.nodes.filter((n) => n.state === "Healthy").length ?? 0;
    await waitFor(() => healthy() === 1, { timeoutMs: 30_000, what: "the first node Healthy" });

    // 240 req/s at 80 per node needs 3 nodes; the load runs until they serve, 20 s at most. (The gateway balances by
    // outstanding requests, so a node takes traffic when the others are busy: the load keeps 8 connections.)
    const heavy = load(rpc, 240, 20);
    cleanup.push(() => heavy.stop());
    await waitFor(() => fleet!.members("alpha").length === 3, {
      timeoutMs: 15_000,
      what: "the pool to grow to 3",
    });
    await waitFor(() => healthy() === 3, { timeoutMs: 15_000, what: "the new nodes to turn Healthy" });
    const served = await waitFor(
      async () => {
        const calls = await answeredByNode(admin.url);
        return ["alpha-light-1", "alpha-light-2"].every((node) => (calls.get(node) ?? 0) > 0)
          ? calls
          : undefined;
      },
      { timeoutMs: 10_000, what: "the new nodes to take traffic" },
    );
    expect(served.get("alpha-light-0")).toBeGreaterThan(0);
    heavy.stop();
    const heavyResult = await heavy.done;
    expect(heavyResult.requests.total).toBeGreaterThan(100);
    expect(failures(heavyResult)).toEqual({ errors: 0, timeouts: 0, non2xx: 0, mismatches: 0 });

    // 20 req/s needs one node: the pool shrinks after the stabilization window, under traffic the whole time.
    const light = load(rpc, 20, 20);
    cleanup.push(() => light.stop());
    await waitFor(() => fleet!.members("alpha").length === 1, {
      timeoutMs: 15_000,
      what: "the pool to shrink to 1",
    });
    await waitFor(
      () => lines.some((l) => l.msg === "scaling decision" && l.to === 1 && (l.from as number) > 1),
      { timeoutMs: 10_000, what: "the scale-down logged" },
    );
    // Keep calling a little longer: the remaining node serves alone.
    const before = (await answeredByNode(admin.url)).get("alpha-light-0") ?? 0;
    await waitFor(async () => ((await answeredByNode(admin.url)).get("alpha-light-0") ?? 0) > before + 5, {
      timeoutMs: 10_000,
      what: "traffic on the remaining node",
    });
    light.stop();
    const lightResult = await light.done;
    expect(lightResult.requests.total).toBeGreaterThan(40);
    expect(failures(lightResult)).toEqual({ errors: 0, timeouts: 0, non2xx: 0, mismatches: 0 });
  });
});
