import { describe, expect, it } from "vitest";
import { erpcConfig, erpcFeatures, proxydConfig } from "../../bench/peers/peerConfig.js";
import { PEERS, notBuiltReason, peerBinary } from "../../bench/peers/peers.js";

const node = { httpUrl: "http://127.0.0.1:8545", wsUrl: "ws://127.0.0.1:8545" };
/** Field tags as a Go binary keeps them, from an eRPC with and one without WebSocket support. */
const newer = Buffer.from(
  '\x00yaml:"httpPort,omitempty"\x00yaml:"httpPortV4,omitempty"\x00yaml:"webSocket,omitempty"',
);
const june2025 = Buffer.from(
  '\x00yaml:"listenV4,omitempty"\x00yaml:"httpPort,omitempty"\x00yaml:"waitBeforeShutdown,omitempty"',
);

describe("the peers' configuration", () => {
  it("gives eRPC only the server keys its binary knows", () => {
    expect(erpcFeatures(newer)).toEqual({ httpPortKey: "httpPortV4", webSocket: true, shutdownWaits: false });
    expect(erpcFeatures(june2025)).toEqual({
      httpPortKey: "httpPort",
      webSocket: false,
      shutdownWaits: true,
    });

    const old = erpcConfig(erpcFeatures(june2025), { chainId: 1, port: 4000, upstreams: [node] });
    expect(old).toMatch(/^ {2}httpPort: 4000$/m);
    expect(old).not.toContain("httpPortV4");
    expect(old).not.toContain("webSocket");
    expect(old).toMatch(/^ {2}waitBeforeShutdown: 0s\n {2}waitAfterShutdown: 0s$/m);
    const current = erpcConfig(erpcFeatures(newer), { chainId: 1, port: 4000, upstreams: [node] });
    expect(current).toMatch(/^ {2}httpPortV4: 4000$/m);
    expect(current).toMatch(/^ {2}webSocket:\n {4}enabled: true$/m);
    expect(current).not.toContain("waitBeforeShutdown");
  });

  it("hedges eRPC's network and caches only finalized answers when asked, one upstream per node", () => {
    const text = erpcConfig(erpcFeatures(june2025), {
      chainId: 31337,
      port: 4000,
      metricsPort: 4001,
      upstreams: [node, { ...node, httpUrl: "http://127.0.0.1:8546" }],
      hedge: { quantile: 0.9, minDelay: "20ms", maxDelay: "1s" },
      cache: true,
    });
    expect(text).toMatch(
      /hedge:\n {12}quantile: 0.9\n {12}minDelay: 20ms\n {12}maxDelay: 1s\n {12}maxCount: 1/,
    );
    expect(text).toMatch(/finality: finalized/);
    expect(text).toMatch(/port: 4001/);
    expect(text.match(/endpoint: /g)).toHaveLength(2);
    expect(erpcConfig(erpcFeatures(june2025), { chainId: 1, port: 1, upstreams: [node] })).not.toContain(
      "database",
    );
  });

  it("keeps proxyd's consensus poller from banning a node whose head stands still during a run", () => {
    expect(proxydConfig(node, 4000, 4001)).toMatch(/^consensus_max_update_threshold = "1h"$/m);
  });

  it("says where a missing peer binary is looked for and how to name another", () => {
    const erpc = PEERS.find((p) => p.name === "erpc")!;
    expect(peerBinary(erpc, { XDG_CACHE_HOME: "/nowhere" })).toBe("/nowhere/lightfleet/bench-peers/erpc");
    expect(notBuiltReason(erpc, { XDG_CACHE_HOME: "/nowhere" })).toMatch(
      /no binary at \/nowhere\/lightfleet\/bench-peers\/erpc.*LIGHTFLEET_BENCH_ERPC/,
    );
    expect(notBuiltReason(erpc, { LIGHTFLEET_BENCH_ERPC: "/nowhere/erpc" })).toMatch(
      /LIGHTFLEET_BENCH_ERPC names \/nowhere\/erpc, which does not exist/,
    );
  });
});
