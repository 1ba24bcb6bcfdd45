import { describe, expect, it } from "vitest";
import type { LabelSelector, LightNodePool } from "../../../src/kubernetes/api/crds.js";
import {
  poolNetwork,
  resolvePools,
  selectorString,
} from "../../../src/kubernetes/controller/poolNetworks.js";
import { parseSelector, selectorRequirements } from "../../support/fakeApi/labelSelector.js";

const pool = (spec: Partial<LightNodePool["spec"]> = {}): LightNodePool => ({
  apiVersion: "lightfleet.io/v1alpha1",
  kind: "LightNodePool",
  metadata: { name: "mainnet", namespace: "eth", generation: 4 },
  spec: {
    network: "mainnet",
    chainId: 1,
    workloadRef: { kind: "StatefulSet", name: "light-mainnet" },
    selector: { matchLabels: { app: "light", network: "mainnet" } },
    reservedPeers: [
      { http: "http://full-0:8545", ws: "ws://full-0:8546" },
      { name: "full-1", http: "http://full-1:8545" },
    ],
    ...spec,
  },
});

describe("LightNodePool to controller network", () => {
  it("turns selectors into the API's query form", () => {
    expect(
      selectorString({
        matchLabels: { a: "b" },
        matchExpressions: [
          { key: "tier", operator: "In", values: ["x", "y"] },
          { key: "old", operator: "DoesNotExist" },
          { key: "z", operator: "Exists" },
          { key: "k", operator: "NotIn", values: ["v"] },
        ],
      }),
    ).toBe("a=b,tier in (x,y),!old,z,k notin (v)");
  });

  it("writes selectors the API server reads as the pool means them", () => {
    const selectors: LabelSelector[] = [
      { matchLabels: { app: "light", "app.kubernetes.io/instance": "lf-1" } },
      {
        matchLabels: { a: "b" },
        matchExpressions: [
          { key: "tier", operator: "In", values: ["x", "y"] },
          { key: "example.org/old", operator: "DoesNotExist" },
          { key: "z", operator: "Exists" },
          { key: "k", operator: "NotIn", values: ["v", ""] },
        ],
      },
      {},
    ];
    for (const selector of selectors)
      expect(parseSelector(selectorString(selector))).toEqual(selectorRequirements(selector));
  });

  it("refuses a selector the API server would refuse (400 on every list), naming the field", () => {
    for (const [selector, field] of [
      [
        { matchExpressions: [{ key: "tier", operator: "In", values: [] }] },
        "spec.selector.matchExpressions[0].values",
      ],
      [
        { matchExpressions: [{ key: "tier", operator: "NotIn" }] },
        "spec.selector.matchExpressions[0].values",
      ],
      [
        { matchExpressions: [{ key: "tier", operator: "Exists", values: ["x"] }] },
        "spec.selector.matchExpressions[0].values",
      ],
      [
        { matchExpressions: [{ key: "bad key", operator: "Exists" }] },
        "spec.selector.matchExpressions[0].key",
      ],
      [{ matchLabels: { app: "light node" } }, "spec.selector.matchLabels.app"],
      [{ matchLabels: { "-app": "x" } }, "spec.selector.matchLabels.-app"],
      [{ matchLabels: { app: "x".repeat(64) } }, "spec.selector.matchLabels.app"],
    ] as const) {
      expect(() => poolNetwork(pool({ selector: selector as LightNodePool["spec"]["selector"] }))).toThrow(
        field,
      );
      const { rejected } = resolvePools([pool({ selector: selector as LightNodePool["spec"]["selector"] })]);
      expect(rejected.map((r) => r.reason)).toEqual(["InvalidSpec"]);
    }
  });

  it("gives the same network config a file would, with the pool's health overrides and defaults", () => {
    const given = pool({ health: { maxLagBlocks: 5, probeInterval: "1s" } });
    const { network, binding, ref } = poolNetwork(given);
    expect(network).toMatchObject({
      name: "mainnet",
      chainId: 1,
      blockTimeMs: 12_000,
      reservedPeers: [{ name: "peer-0" }, { name: "full-1" }],
    });
    expect(network.health).toMatchObject({
      maxLagBlocks: 5,
      probeInterval: 1_000,
      unhealthyAfter: 2,
      restartAfter: 120_000,
    });
    expect(binding).toEqual({
      key: "eth/mainnet",
      network: "mainnet",
      namespace: "eth",
      labelSelector: "app=light,network=mainnet",
      rpcPort: 8545,
      workload: { kind: "StatefulSet", name: "light-mainnet" },
    });
    expect(ref).toEqual({
      key: "eth/mainnet",
      network: "mainnet",
      namespace: "eth",
      name: "mainnet",
      generation: 4,
      accepted: { generation: 4, spec: given.spec },
    });
  });

  it("refuses an invalid pool with its name and the field", () => {
    expect(() => poolNetwork(pool({ reservedPeers: [{ http: "ftp://x" }] }))).toThrow(
      /LightNodePool eth\/mainnet: spec\.reservedPeers\.0\.http/,
    );
    expect(() => poolNetwork(pool({ health: { probeInterval: "soon" } }))).toThrow(
      /spec\.health\.probeInterval/,
    );
  });
});

describe("resolvePools", () => {
  const named = (name: string, created: string, spec: Partial<LightNodePool["spec"]> = {}) => {
    const p = pool(spec);
    return { ...p, metadata: { ...p.metadata, name, creationTimestamp: created } };
  };

  it("runs every valid pool, rejects an invalid one with its field, and keeps a network with its oldest pool", () => {
    const { pools, rejected } = resolvePools([
      named("newer", "2026-02-01T00:00:00Z"),
      named("older", "2026-01-01T00:00:00Z"),
      named("broken", "2026-01-15T00:00:00Z", { network: "sepolia", reservedPeers: [{ http: "ftp://x" }] }),
      named("holesky", "2026-03-01T00:00:00Z", { network: "holesky", chainId: 17000 }),
    ]);
    expect(pools.map((p) => `${p.ref.name}:${p.ref.network}`)).toEqual(["older:mainnet", "holesky:holesky"]);
    expect(rejected.map((r) => [r.pool.metadata.name, r.reason])).toEqual([
      ["broken", "InvalidSpec"],
      ["newer", "DuplicateNetwork"],
    ]);
    expect(rejected[0]!.message).toMatch(/LightNodePool eth\/broken: spec\.reservedPeers\.0\.http/);
    expect(rejected[1]!.message).toBe(
      "LightNodePool eth/newer: network mainnet is already run by LightNodePool eth/older in this namespace",
    );
  });

  it("runs one network in two namespaces as two pools, each under its namespace's key", () => {
    const other = named("mainnet", "2026-02-01T00:00:00Z");
    const { pools, rejected } = resolvePools([
      named("mainnet", "2026-01-01T00:00:00Z"),
      { ...other, metadata: { ...other.metadata, namespace: "eth-b" } },
    ]);
    expect(rejected).toEqual([]);
    expect(pools.map((p) => [p.key, p.network.name, p.binding.key, p.ref.key])).toEqual([
      ["eth/mainnet", "mainnet", "eth/mainnet", "eth/mainnet"],
      ["eth-b/mainnet", "mainnet", "eth-b/mainnet", "eth-b/mainnet"],
    ]);
  });
});

describe("a refused spec", () => {
  const refusedSpec = { health: { maxLagSeconds: "500ms" } };
  const withUid = (
    p: LightNodePool,
    generation: number,
    status?: LightNodePool["status"],
  ): LightNodePool => ({
    ...p,
    metadata: { ...p.metadata, uid: "uid-pool", generation },
    ...(status ? { status } : {}),
  });

  it("runs the pool with the spec this replica last accepted, and says what is refused and what runs", () => {
    const good = withUid(pool({ health: { maxLagBlocks: 5 } }), 4);
    const remembered = new Map([["eth/mainnet", { uid: "uid-pool", generation: 4, spec: good.spec }]]);
    const { pools, rejected } = resolvePools([withUid(pool(refusedSpec), 5)], remembered);
    expect(pools.map((p) => [p.key, p.network.health.maxLagBlocks, p.ref.generation])).toEqual([
      ["eth/mainnet", 5, 5],
    ]);
    expect(pools[0]!.ref.accepted?.generation).toBe(4);
    expect(rejected).toHaveLength(1);
    expect(rejected[0]).toMatchObject({ reason: "InvalidSpec", runsGeneration: 4 });
    expect(rejected[0]!.message).toMatch(
      /spec\.health\.maxLagSeconds: is 500ms.*still running generation 4, the last accepted spec/,
    );
  });

  it("falls back on the accepted spec written in the pool's status (a controller started meanwhile)", () => {
    const good = pool();
    const refused = withUid(pool(refusedSpec), 7, {
      acceptedGeneration: 6,
      acceptedSpec: JSON.stringify(good.spec),
    });
    const { pools, rejected } = resolvePools([refused]);
    expect(pools.map((p) => p.ref.accepted?.generation)).toEqual([6]);
    expect(rejected.map((r) => r.runsGeneration)).toEqual([6]);
  });

  it("does not run the spec of another pool of the same name, nor an unreadable one", () => {
    const remembered = new Map([["eth/mainnet", { uid: "uid-old", generation: 4, spec: pool().spec }]]);
    const recreated = withUid(pool(refusedSpec), 1, { acceptedGeneration: 1, acceptedSpec: "{not json" });
    const { pools, rejected } = resolvePools([recreated], remembered);
    expect(pools).toEqual([]);
    expect(rejected[0]!.runsGeneration).toBeUndefined();
    expect(rejected[0]!.message).toMatch(/no accepted spec to run, its pods are not routed/);
  });
});
