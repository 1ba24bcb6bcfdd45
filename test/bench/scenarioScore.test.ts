import { describe, expect, it } from "vitest";
import { goodNodesUnrouted, stayedRoutedMs, type RoutingChange } from "../../bench/scenarioScore.js";

const PROBE_MS = 250;
const change = (node: string, at: number, routed: boolean): RoutingChange => ({ node, at, routed });

describe("how long a bad node stayed routed", () => {
  it("is the time from turning bad to its first unroute after, the longest over the bad nodes", () => {
    const history = [change("a", 5_000, false), change("b", 5_400, false), change("a", 9_000, true)];
    const badAt = new Map([
      ["a", 4_200],
      ["b", 4_300],
    ]);
    expect(stayedRoutedMs(history, 0, badAt, PROBE_MS)).toBe(1_100);
  });

  it("is never-left (Infinity) for a bad node that stayed routed, and undefined with no bad node", () => {
    expect(stayedRoutedMs([change("b", 5_000, false)], 0, new Map([["a", 4_000]]), PROBE_MS)).toBe(
      Number.POSITIVE_INFINITY,
    );
    expect(stayedRoutedMs([change("a", 5_000, false)], 0, new Map(), PROBE_MS)).toBeUndefined();
  });

  it("is 0 for a node out of routing before it turned bad (a sync, say) and not routed again", () => {
    const history = [change("a", 1_000, false)];
    expect(stayedRoutedMs(history, 1, new Map([["a", 4_000]]), PROBE_MS)).toBe(0);
  });

  it("counts an unroute up to a probe before the node turned bad as leaving at once", () => {
    const history = [change("a", 3_900, false)];
    expect(stayedRoutedMs(history, 0, new Map([["a", 4_000]]), PROBE_MS)).toBe(0);
  });
});

describe("good nodes unrouted", () => {
  it("counts each node not made bad that left routing, once, and never a bad one", () => {
    const changes = [change("a", 1_000, false), change("b", 1_100, false), change("b", 2_000, true)];
    expect(goodNodesUnrouted(changes, ["a"], new Map())).toBe(1);
    expect(goodNodesUnrouted([...changes, change("b", 3_000, false)], ["a"], new Map())).toBe(1);
  });

  it("does not count a node held at the threshold that leaves routing only after its heal, catching up", () => {
    // Healed 3 blocks behind, the node syncs from its peers and says so (eth_syncing): out of routing until caught up.
    const changes = [change("held", 12_300, false), change("held", 13_000, true)];
    expect(goodNodesUnrouted(changes, [], new Map([["held", 12_000]]))).toBe(0);
  });

  it("counts it when it left routing while the fault was on, and counts other nodes after the heal", () => {
    expect(goodNodesUnrouted([change("held", 11_000, false)], [], new Map([["held", 12_000]]))).toBe(1);
    expect(goodNodesUnrouted([change("other", 12_300, false)], [], new Map([["held", 12_000]]))).toBe(1);
  });
});
