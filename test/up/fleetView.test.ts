import { describe, expect, it } from "vitest";
import type { EngineOutput, NodeStatus } from "../../src/health/types.js";
import { FleetView } from "../../src/up/fleetView.js";

function status(name: string, state: NodeStatus["state"], routed: boolean): NodeStatus {
  return { name, state, routed, message: "", since: 0 };
}

function output(nodes: NodeStatus[], extra: Partial<EngineOutput> = {}): EngineOutput {
  return {
    state: {},
    nodes,
    decisions: [],
    reference: { number: 120, hash: "0xa", timestamp: 1, seenAt: 0, peers: ["full-0"] },
    ...extra,
  };
}

describe("FleetView", () => {
  it("prints one line per transition and restart, and a pool summary when its figures change", () => {
    const lines: string[] = [];
    let now = 0;
    const view = new FleetView({ write: (l) => lines.push(l), clock: () => now });
    const healthy = [status("mainnet-light-0", "Healthy", true), status("mainnet-light-1", "Healthy", true)];
    view.onRound("mainnet", output(healthy));
    view.onRound("mainnet", output(healthy));
    expect(lines).toEqual([
      "mainnet          head 120  2/2 healthy  routed: mainnet-light-0 mainnet-light-1",
    ]);
    lines.length = 0;
    view.onRound(
      "mainnet",
      output([healthy[0]!, status("mainnet-light-1", "Lagging", false)], {
        decisions: [
          {
            kind: "transition",
            node: "mainnet-light-1",
            from: "Healthy",
            to: "Lagging",
            message: "5 blocks (10 s) behind reference 120",
          },
          { kind: "unroute", node: "mainnet-light-1" },
          { kind: "restart", node: "mainnet-light-1", reason: "lag" },
        ],
      }),
    );
    expect(lines).toEqual([
      "mainnet-light-1  Healthy -> Lagging  (5 blocks (10 s) behind reference 120)",
      "mainnet-light-1  restart (lag)",
      "mainnet          head 120  1/2 healthy  routed: mainnet-light-0",
    ]);
    lines.length = 0;
    now = 31_000;
    view.onRound("mainnet", output([healthy[0]!, status("mainnet-light-1", "Lagging", false)]));
    expect(lines).toHaveLength(1);
  });

  it("reports a systemic failure once when it starts and once when it ends", () => {
    const lines: string[] = [];
    const view = new FleetView({ write: (l) => lines.push(l) });
    const nodes = [status("a", "Healthy", true)];
    const systemic = { cause: "no-peer-reachable" as const, message: "no reserved peer is reachable" };
    view.onRound("sepolia", output(nodes, { systemic }));
    view.onRound("sepolia", output(nodes, { systemic }));
    view.onRound("sepolia", output(nodes));
    expect(lines.filter((l) => l.includes("systemic") || l.includes("SYSTEMIC"))).toEqual([
      "sepolia  SYSTEMIC no-peer-reachable: no restarts, routing kept (no reserved peer is reachable)",
      "sepolia  systemic failure over",
    ]);
  });

  it("prints one line when a reserved peer goes down and one when it comes back", () => {
    const lines: string[] = [];
    const view = new FleetView({ write: (l) => lines.push(l) });
    const nodes = [status("mainnet-light-0", "Healthy", true)];
    const peer = (name: string, reachable: boolean, head?: number) => ({
      name,
      reachable,
      ...(head !== undefined ? { head: { number: head, hash: "0x1", timestamp: head } } : {}),
    });
    // Not reached yet at start-up, then reached: not news.
    view.onRound("mainnet", output(nodes), [peer("mainnet-full-0", false), peer("mainnet-full-1", true, 5)]);
    view.onRound("mainnet", output(nodes), [
      peer("mainnet-full-0", true, 5),
      peer("mainnet-full-1", true, 5),
    ]);
    const peerLines = () => lines.filter((l) => l.includes("reserved peer"));
    expect(peerLines()).toEqual([]);
    view.onRound("mainnet", output(nodes), [
      peer("mainnet-full-0", false, 5),
      peer("mainnet-full-1", true, 6),
    ]);
    view.onRound("mainnet", output(nodes), [
      peer("mainnet-full-0", false, 5),
      peer("mainnet-full-1", true, 7),
    ]);
    const atEight = {
      reference: { number: 8, hash: "0x1", timestamp: 8, seenAt: 0, peers: ["mainnet-full-1"] },
    };
    view.onRound("mainnet", output(nodes, atEight), [
      peer("mainnet-full-0", true, 8),
      peer("mainnet-full-1", true, 8),
    ]);
    expect(peerLines()).toEqual([
      "mainnet-full-0   reserved peer down (unreachable)",
      "mainnet-full-0   reserved peer back (head 8)",
    ]);
  });

  it("a peer back below the reference is replaying: one line when it is back, one when it has caught up", () => {
    const lines: string[] = [];
    const view = new FleetView({ write: (l) => lines.push(l) });
    const nodes = [status("mainnet-light-0", "Healthy", true)];
    const peer = (reachable: boolean, head: number) => ({
      name: "mainnet-full-0",
      reachable,
      head: { number: head, hash: "0x1", timestamp: head },
    });
    view.onRound("mainnet", output(nodes), [peer(true, 120)]);
    view.onRound("mainnet", output(nodes), [peer(false, 120)]);
    view.onRound("mainnet", output(nodes), [peer(true, 27)]);
    view.onRound("mainnet", output(nodes), [peer(true, 90)]);
    view.onRound("mainnet", output(nodes), [peer(true, 120)]);
    view.onRound("mainnet", output(nodes), [peer(true, 121)]);
    expect(lines.filter((l) => l.includes("reserved peer"))).toEqual([
      "mainnet-full-0   reserved peer down (unreachable)",
      "mainnet-full-0   reserved peer back, replaying (head 27, reference 120)",
      "mainnet-full-0   reserved peer caught up (head 120)",
    ]);
  });

  it("shows a new member at once, then its catching up every few seconds while it climbs, until it is Healthy", () => {
    const lines: string[] = [];
    let now = 0;
    const view = new FleetView({ write: (l) => lines.push(l), clock: () => now, progressEveryMs: 5_000 });
    const ready = status("mainnet-light-0", "Healthy", true);
    const starting = (head: number | undefined, lag?: number): NodeStatus => ({
      ...status("mainnet-light-3", "Starting", false),
      ...(head !== undefined ? { head } : {}),
      ...(lag !== undefined ? { lagBlocks: lag } : {}),
    });
    view.onRound("mainnet", output([ready]));
    view.onScaling({ network: "mainnet", current: 3, replicas: 4, reason: "190 req/s needs 4 at 50/node" });
    view.onRound(
      "mainnet",
      output([ready, starting(undefined)], {
        decisions: [
          {
            kind: "transition",
            node: "mainnet-light-3",
            from: undefined,
            to: "Starting",
            message: "started, waiting for its first answer",
          },
        ],
      }),
    );
    const clocked = (at: number, head: number) => {
      now = at;
      view.onRound("mainnet", output([ready, starting(head, 120 - head)]));
    };
    clocked(1_000, 10);
    clocked(3_000, 30);
    clocked(6_500, 65);
    // No climb since the last line: nothing to say.
    clocked(9_000, 65);
    clocked(12_000, 65);
    clocked(13_000, 100);
    now = 14_000;
    view.onRound(
      "mainnet",
      output([ready, { ...status("mainnet-light-3", "Healthy", true), head: 120 }], {
        decisions: [
          {
            kind: "transition",
            node: "mainnet-light-3",
            from: "Starting",
            to: "Healthy",
            message: "in sync",
          },
        ],
      }),
    );
    now = 20_000;
    view.onRound("mainnet", output([ready, { ...status("mainnet-light-3", "Healthy", true), head: 121 }]));
    const summary = (l: string) => l.includes(" healthy  routed:");
    expect(lines.filter((l) => (l.includes("light-3") || l.includes("scaling")) && !summary(l))).toEqual([
      "mainnet  scaling 3 -> 4 light nodes (190 req/s needs 4 at 50/node)",
      "mainnet-light-3  new -> Starting  (started, waiting for its first answer)",
      "mainnet-light-3  catching up: head 10, 110 blocks behind reference 120",
      "mainnet-light-3  catching up: head 65, 55 blocks behind reference 120",
      "mainnet-light-3  catching up: head 100, 20 blocks behind reference 120",
      "mainnet-light-3  Starting -> Healthy  (in sync)",
    ]);
  });

  it("prints one line per resize of the autoscaler", () => {
    const lines: string[] = [];
    const view = new FleetView({ write: (l) => lines.push(l) });
    view.onResize({ network: "mainnet", current: 3, replicas: 4, reason: "190 req/s needs 4 at 50/node" });
    expect(lines).toEqual(["mainnet  scaled 3 -> 4 light nodes (190 req/s needs 4 at 50/node)"]);
  });
});
