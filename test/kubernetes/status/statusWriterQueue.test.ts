import { createServer } from "node:http";
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { KubeConfig } from "@kubernetes/client-node";
import { afterEach, describe, expect, it } from "vitest";
import type { Fleet, FleetMember } from "../../../src/fleet/fleet.js";
import { StatusWriter } from "../../../src/kubernetes/status/statusWriter.js";
import type { PoolRef } from "../../../src/kubernetes/status/statusWriter.js";
import type { EngineOutput, NodeState, NodeStatus } from "../../../src/health/types.js";
import { silentLogger } from "../../../src/log/logger.js";
import { waitFor } from "../../support/waitFor.js";

const T0 = Date.UTC(2026, 10, 22, 12);
const pool: PoolRef = {
  key: "mainnet",
  network: "mainnet",
  namespace: "eth",
  name: "mainnet",
  generation: 1,
};

interface Call {
  method: string;
  kind: "lightnodes" | "lightnodepools";
  name: string;
  state?: string;
}

/**
 * An API server on 127.0.0.1 that records every LightNode create and status patch and, while `hold` is set, keeps
 * LightNode status responses back until released, so a test sees what is in flight at once.
 */
async function apiServer() {
  const calls: Call[] = [];
  const held: Array<{ name: string; respond: () => void }> = [];
  const inFlight = new Map<string, number>();
  let maxInFlight = 0;
  let maxPerObject = 0;
  const failing = new Map<string, number>();
  const state = { hold: false };
  const respond = (res: ServerResponse, code: number, key: string) => {
    inFlight.set(key, inFlight.get(key)! - 1);
    res.writeHead(code, { "content-type": "application/json" });
    res.end(code === 404 ? JSON.stringify({ kind: "Status", code: 404, reason: "NotFound" }) : "{}");
  };
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let raw = "";
    req.on("data", (chunk: Buffer) => (raw += chunk.toString()));
    req.on("end", () => {
      const body = JSON.parse(raw || "{}") as {
        status?: { state?: string };
        metadata?: { name: string; ownerReferences?: Array<{ uid: string }> };
      };
      const match = /\/(lightnodes|lightnodepools)(?:\/([\w-]+)\/status)?$/.exec(req.url ?? "");
      if (!match) return void res.writeHead(404).end();
      const kind = match[1] as Call["kind"];
      const name = match[2] ?? body.metadata!.name;
      const key = `${req.method} ${kind}/${name}`;
      calls.push({ method: req.method!, kind, name, state: body.status?.state });
      inFlight.set(key, (inFlight.get(key) ?? 0) + 1);
      maxPerObject = Math.max(maxPerObject, inFlight.get(key)!);
      const total = [...inFlight.values()].reduce((a, b) => a + b, 0);
      maxInFlight = Math.max(maxInFlight, total);
      const fails = failing.get(name) ?? 0;
      if (req.method === "PATCH" && kind === "lightnodes" && fails > 0) {
        failing.set(name, fails - 1);
        return respond(res, 404, key);
      }
      if (state.hold && req.method === "PATCH" && kind === "lightnodes")
        held.push({ name, respond: () => respond(res, 200, key) });
      else respond(res, req.method === "POST" ? 201 : 200, key);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromOptions({
    clusters: [
      {
        name: "test",
        server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        skipTLSVerify: true,
      },
    ],
    users: [{ name: "test", token: "t0ken" }],
    contexts: [{ name: "test", cluster: "test", user: "test" }],
    currentContext: "test",
  });
  return {
    kubeConfig,
    calls,
    state,
    held,
    /** The next status patch of `name` answers 404, as for a LightNode garbage-collected with its pod. */
    failNext: (name: string) => failing.set(name, 1),
    /** Answers the held patches, but those of `keep`. */
    release: (keep?: string) => {
      const kept = held.filter((h) => h.name === keep);
      for (const h of held.splice(0)) if (h.name !== keep) h.respond();
      held.push(...kept);
    },
    get maxInFlight() {
      return maxInFlight;
    },
    get maxPerObject() {
      return maxPerObject;
    },
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

const node = (name: string, state: NodeState): NodeStatus => ({
  name,
  state,
  routed: state === "Healthy",
  head: 100,
  lagBlocks: 0,
  message: state,
  since: T0,
});

const output = (nodes: NodeStatus[]): EngineOutput => ({
  state: {} as EngineOutput["state"],
  reference: { number: 100, hash: "0x01", timestamp: T0 / 1000, seenAt: T0, peers: ["full-0"] },
  nodes,
  decisions: [],
});

/** A fleet whose pods (name and uid) the test changes. */
function podFleet(pods: Map<string, string>) {
  return {
    members: (): FleetMember[] =>
      [...pods.keys()].map((name) => ({
        name,
        network: "mainnet",
        httpUrl: "http://10.0.0.1:8545",
        startedAt: T0,
        routed: true,
        restarting: false,
        restarts: [],
      })),
    podsWithoutGate: () => [] as string[],
    podUid: (_network: string, name: string) => pods.get(name),
  } as unknown as Fleet & {
    podsWithoutGate(network: string): string[];
    podUid(network: string, pod: string): string | undefined;
  };
}

/** A StatusWriter for the pool "mainnet" (unless `pools` says otherwise) over `pods`, against the test's server. */
function writerFor(
  api: { kubeConfig: KubeConfig },
  pods: Map<string, string>,
  clock: () => number,
  options: { pools?: Map<string, PoolRef>; concurrency?: number } = {},
): StatusWriter {
  return new StatusWriter(api.kubeConfig, {
    pools: () => options.pools ?? new Map([["mainnet", pool]]),
    fleet: podFleet(pods),
    logger: silentLogger(),
    clock,
    ...(options.concurrency ? { concurrency: options.concurrency } : {}),
  });
}

describe("status writes with bounded concurrency", () => {
  const cleanup: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const step of cleanup.splice(0).reverse()) await step();
  });

  it("keeps at most `concurrency` writes in flight, and an object's writes in order, one at a time", async () => {
    const api = await apiServer();
    cleanup.push(() => api.close());
    const names = Array.from({ length: 12 }, (_, i) => `light-${i}`);
    const pods = new Map(names.map((n) => [n, `uid-${n}`]));
    let now = T0;
    const writer = writerFor(api, pods, () => now, { concurrency: 3 });
    api.state.hold = true;
    const first = writer.onRound("mainnet", output(names.map((n) => node(n, "Healthy"))));
    await waitFor(() => api.held.length === 3, { what: "three status patches held" });
    // The next rounds run while the first one's writes are still under way: light-0 flips twice.
    now += 2_000;
    const second = writer.onRound(
      "mainnet",
      output(names.map((n) => node(n, n === "light-0" ? "Lagging" : "Healthy"))),
    );
    now += 2_000;
    const third = writer.onRound(
      "mainnet",
      output(names.map((n) => node(n, n === "light-0" ? "Diverged" : "Healthy"))),
    );
    const patched = (name: string) =>
      api.calls.filter((c) => c.method === "PATCH" && c.name === name).map((c) => c.state);
    // Every other node's write goes through while light-0's first write stays in flight.
    await waitFor(
      () => {
        api.release("light-0");
        return names.slice(1).every((n) => patched(n).length === 1) && api.held.length === 1;
      },
      { what: "all but light-0 written" },
    );
    // Slots are free now, yet light-0's next write waits for its first.
    expect(patched("light-0")).toEqual(["Healthy"]);
    await waitFor(
      () => {
        api.release();
        return patched("light-0").length === 2 && api.held.length === 0;
      },
      { what: "light-0's next write" },
    );
    await Promise.all([first, second, third]);
    expect(api.maxInFlight).toBeLessThanOrEqual(3);
    expect(api.maxInFlight).toBe(3);
    expect(api.maxPerObject).toBe(1);
    // light-0: its first status, then the latest; "Lagging", still waiting when "Diverged" came, was superseded.
    expect(patched("light-0")).toEqual(["Healthy", "Diverged"]);
    expect(api.calls.filter((c) => c.method === "POST")).toHaveLength(12);
  });

  it("forgets pods that leave the pool and pools that are deleted, so churn does not grow its memory", async () => {
    const api = await apiServer();
    cleanup.push(() => api.close());
    const pods = new Map<string, string>();
    let now = T0;
    const pools = new Map([["mainnet", pool]]);
    const writer = writerFor(api, pods, () => now, { pools });
    // 30 rounds, each replacing the pool's five pods with five new ones (a Deployment rolled over and over).
    for (let round = 0; round < 30; round++) {
      pods.clear();
      for (let i = 0; i < 5; i++) pods.set(`light-${round}-${i}`, `uid-${round}-${i}`);
      now += 2_000;
      await writer.onRound("mainnet", output([...pods.keys()].map((n) => node(n, "Healthy"))));
      expect(writer.remembered("mainnet").sort()).toEqual([...pods.keys()].sort());
    }
    expect(api.calls.filter((c) => c.method === "POST")).toHaveLength(150);
    // The pool deleted: the next round of any pool forgets its pods.
    pools.delete("mainnet");
    await writer.onRound("holesky", output([]));
    expect(writer.remembered("mainnet")).toEqual([]);
  });

  it("on losing leadership drops writes not yet sent and writes every status afresh in a later term", async () => {
    const api = await apiServer();
    cleanup.push(() => api.close());
    const names = ["light-0", "light-1", "light-2"];
    const pods = new Map(names.map((n) => [n, `uid-${n}`]));
    const writer = writerFor(api, pods, () => T0, { concurrency: 1 });
    const patched = () =>
      api.calls.filter((c) => c.method === "PATCH" && c.name?.startsWith("light-")).length;
    api.state.hold = true;
    const round = writer.onRound("mainnet", output(names.map((n) => node(n, "Healthy"))));
    await waitFor(() => api.held.length === 1, { what: "the first write held" });
    writer.abandon();
    await waitFor(
      () => {
        api.release();
        return api.held.length === 0;
      },
      { what: "the write in flight finished" },
    );
    await round;
    // Only the write already in flight went out (light-0's creation and status); nothing of the others.
    expect(new Set(api.calls.map((c) => c.name))).toEqual(new Set(["light-0"]));
    const before = patched();
    expect(writer.remembered("mainnet")).toEqual([]);
    // Leading again, at the same time and states: every status is written, none is thought current.
    api.state.hold = false;
    await writer.onRound("mainnet", output(names.map((n) => node(n, "Healthy"))));
    expect(patched() - before).toBe(3);
  });

  it("creates the LightNode again for a new pod of the same name, and after its LightNode went missing", async () => {
    const api = await apiServer();
    cleanup.push(() => api.close());
    const pods = new Map([["light-0", "uid-a"]]);
    let now = T0;
    const writer = writerFor(api, pods, () => now);
    const round = async (state: NodeState) => {
      now += 2_000;
      await writer.onRound("mainnet", output([node("light-0", state)]));
    };
    const creates = () => api.calls.filter((c) => c.method === "POST").length;
    await round("Healthy");
    await round("Lagging");
    expect(creates()).toBe(1);
    // Evicted and recreated between two rounds: same name, new uid; the old LightNode goes with the old pod.
    pods.set("light-0", "uid-b");
    await round("Lagging");
    expect(creates()).toBe(2);
    // A status patch answered 404: the next round creates the LightNode again before writing.
    api.failNext("light-0");
    await round("Healthy");
    expect(creates()).toBe(2);
    await round("Healthy");
    expect(creates()).toBe(3);
    const patches = api.calls.filter((c) => c.method === "PATCH" && c.kind === "lightnodes");
    expect(patches.map((c) => c.state)).toEqual(["Healthy", "Lagging", "Lagging", "Healthy", "Healthy"]);
  });
});
