import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import type { AnvilNode } from "../../src/devnet/anvil.js";
import { spawnGateway } from "../support/runCli.js";
import type { SpawnedGateway } from "../support/runCli.js";
import { waitFor } from "../support/waitFor.js";
import { startUpstreamNode, writeGatewayConfig } from "./support.js";

/**
 * A rolling update as Kubernetes runs it: the client reaches whichever gateways last answered /readyz 200 (the
 * EndpointSlice, refreshed every ROUTER_REFRESH_MS as the endpoint removal propagates), a new gateway joins, the old
 * one gets SIGTERM. No call may fail.
 */
const ROUTER_REFRESH_MS = 200;
const SHUTDOWN_DELAY = "1500ms";
const CALLERS = 4;
const MAX_CALLS = 20_000;

describe("a gateway rollout under load", () => {
  let node: AnvilNode;
  let dir: string;
  const gateways: SpawnedGateway[] = [];

  beforeAll(async () => {
    node = await startUpstreamNode();
    dir = mkdtempSync(join(tmpdir(), "lightfleet-rollout-"));
  });

  afterAll(async () => {
    for (const { child } of gateways) if (child.exitCode === null) child.kill("SIGKILL");
    await node?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("fails readiness first, keeps serving through the shutdown delay, closes WebSockets with 1001 and exits 0: no call fails", async () => {
    const file = writeGatewayConfig(join(dir, "gateway.yaml"), {
      peer: node.httpUrl,
      network: { default: true, upstreams: [{ name: "upstream", http: node.httpUrl, ws: node.wsUrl }] },
      gateway: { shutdownDelay: SHUTDOWN_DELAY },
    });
    const ready = async (g: SpawnedGateway) =>
      fetch(`${g.admin}/readyz`)
        .then((r) => r.status === 200)
        .catch(() => false);
    const old = await spawnGateway(file);
    gateways.push(old);
    await waitFor(() => ready(old), { what: "the old gateway ready" });

    // The router: the set of ready gateways, as the endpoints controller and kube-proxy would see it.
    let routed: SpawnedGateway[] = [old];
    let rolling = true;
    const router = (async () => {
      while (rolling) {
        const states = await Promise.all(gateways.map(async (g) => ((await ready(g)) ? [g] : [])));
        routed = states.flat();
        await new Promise((resolve) => setTimeout(resolve, ROUTER_REFRESH_MS));
      }
    })();

    let calls = 0;
    const failures: string[] = [];
    const callers = Array.from({ length: CALLERS }, async (_, i) => {
      while (rolling && calls < MAX_CALLS) {
        const target = routed[(calls + i) % routed.length];
        if (!target) {
          failures.push("no gateway routed");
          await new Promise((resolve) => setTimeout(resolve, 10));
          continue;
        }
        calls++;
        try {
          const response = await fetch(`${target.url}/`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ jsonrpc: "2.0", id: calls, method: "eth_blockNumber", params: [] }),
          });
          const body = (await response.json()) as { result?: string };
          if (response.status !== 200 || body.result !== "0x3") failures.push(`${response.status}`);
        } catch (error) {
          failures.push(String((error as Error).cause ?? error));
        }
      }
    });

    const fresh = await spawnGateway(file);
    gateways.push(fresh);
    await waitFor(() => routed.includes(fresh), { what: "the new gateway routed" });
    const ws = new WebSocket(`${old.url.replace("http", "ws")}/ws`);
    await new Promise((resolve, reject) => ws.once("open", resolve).once("error", reject));
    const closed = new Promise<[number, string]>((resolve) =>
      ws.once("close", (code, reason) => resolve([code, reason.toString()])),
    );
    const exited = new Promise<number | null>((resolve) => old.child.once("exit", resolve));
    const callsBefore = calls;
    const sigtermAt = Date.now();
    old.child.kill("SIGTERM");
    // Unready at once, yet a call that still reaches it (a router not yet refreshed) is answered.
    await waitFor(async () => !(await ready(old)), {
      what: "the old gateway failing /readyz",
      intervalMs: 20,
    });
    let wsClosed = false;
    void closed.then(() => (wsClosed = true));
    const late = await fetch(`${old.url}/`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 0, method: "eth_blockNumber", params: [] }),
    });
    const lateAnswer = { status: late.status, body: (await late.json()) as { result?: string }, wsClosed };

    const closedWith = await closed;
    const closedAfterMs = Date.now() - sigtermAt;
    const code = await exited;
    await waitFor(() => calls > callsBefore + 200, { what: "calls through the new gateway" });
    rolling = false;
    await Promise.all([...callers, router]);

    expect(failures.length, failures.slice(0, 5).join("; ")).toBe(0);
    expect(closedWith).toEqual([1001, "server shutting down"]);
    expect(code).toBe(0);
    // The WebSocket closes only after the delay, when the old gateway has left the routes.
    expect(closedAfterMs).toBeGreaterThanOrEqual(1_400);
    expect(lateAnswer).toEqual({
      status: 200,
      body: { jsonrpc: "2.0", id: 0, result: "0x3" },
      wsClosed: false,
    });
    expect(calls).toBeGreaterThan(200);
  });

  it("with worker processes: the primary fails /readyz while the workers serve on, saying connection: close", async () => {
    const file = writeGatewayConfig(join(dir, "workers.yaml"), {
      peer: node.httpUrl,
      network: { default: true, upstreams: [{ name: "upstream", http: node.httpUrl, ws: node.wsUrl }] },
      workers: 2,
      gateway: { shutdownDelay: "3s" },
    });
    const gateway = await spawnGateway(file);
    gateways.push(gateway);
    const readyz = () =>
      fetch(`${gateway.admin}/readyz`)
        .then((r) => r.status)
        .catch(() => 0);
    await waitFor(async () => (await readyz()) === 200, { what: "ready" });
    const exited = new Promise<number | null>((resolve) => gateway.child.once("exit", resolve));
    gateway.child.kill("SIGTERM");
    await waitFor(async () => (await readyz()) === 503, { what: "/readyz failing", intervalMs: 50 });
    const response = await fetch(`${gateway.url}/`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_blockNumber", params: [] }),
    });
    expect(((await response.json()) as { result?: string }).result).toBe("0x3");
    expect(response.headers.get("connection")).toBe("close");
    expect(await exited).toBe(0);
  });
});
