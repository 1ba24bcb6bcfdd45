import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ConfigError } from "../../src/config/errors.js";
import { loadConfig, parseConfig, parseConfigText } from "../../src/config/loadConfig.js";

function problemsOf(run: () => unknown): string[] {
  try {
    run();
  } catch (error) {
    if (error instanceof ConfigError) return error.problems.map((p) => `${p.path}: ${p.message}`);
    throw error;
  }
  throw new Error("expected a ConfigError");
}

const peer = { name: "full-0", http: "http://127.0.0.1:8545" };

describe("config validation", () => {
  it("applies DESIGN.md's health defaults and preset values", () => {
    const config = parseConfig(
      { networks: [{ name: "mainnet", preset: "mainnet", reservedPeers: [peer] }] },
      "t",
      {},
    );
    const [network] = config.networks;
    expect(network!.chainId).toBe(1);
    expect(network!.blockTimeMs).toBe(12_000);
    expect(network!.health).toMatchObject({
      probeInterval: 2_000,
      maxLagBlocks: 3,
      maxLagSeconds: 36_000,
      restartLagBlocks: 32,
      stallAfter: 120_000,
      unhealthyAfter: 2,
      healthyAfter: 3,
      restartAfter: 120_000,
      startupGrace: 600_000,
      maxConcurrentRestarts: 1,
      crashLoopAfter: 5,
      peerQuorum: 2,
    });
    expect(network!.gateway.getLogsMaxRange).toBe(1000);
    expect(config.gateway.port).toBe(8545);
    expect(config.keys.port).toBe(8080);
    expect(config.admin.port).toBe(9464);
  });

  it.each([
    [
      "a bad peer URL, named by its path",
      {
        networks: [
          { name: "a", chainId: 1, reservedPeers: [peer] },
          { name: "b", chainId: 2, reservedPeers: [{ name: "p", http: "ftp://x" }] },
        ],
      },
      "networks[1].reservedPeers[0].http: must be an http(s) URL",
    ],
    ["an unknown top-level key", { networks: [], gatway: {} }, "gatway: unknown option"],
    [
      "an unknown nested key",
      { networks: [{ name: "a", chainId: 1, reservedPeers: [peer], health: { maxLag: 3 } }] },
      "networks[0].health.maxLag: unknown option",
    ],
    [
      "ropsten as a preset",
      { networks: [{ name: "ropsten", preset: "ropsten", reservedPeers: [peer] }] },
      "networks[0].preset: ropsten (chain id 3) is deprecated and shut down; use sepolia or hoodi instead",
    ],
    [
      "ropsten by chain id",
      { networks: [{ name: "r", chainId: 3, reservedPeers: [peer] }] },
      "networks[0].chainId: ropsten (chain id 3) is deprecated and shut down; use sepolia or hoodi instead",
    ],
    [
      "a chain id that contradicts the preset",
      { networks: [{ name: "m", preset: "mainnet", chainId: 5, reservedPeers: [peer] }] },
      "networks[0].chainId: is 5 but preset mainnet has chain id 1",
    ],
    [
      "no chain id and no preset",
      { networks: [{ name: "x", reservedPeers: [peer] }] },
      "networks[0].chainId: is required when no preset is given",
    ],
    [
      "a bad duration",
      { networks: [{ name: "x", chainId: 9, reservedPeers: [peer], health: { stallAfter: "soon" } }] },
      'networks[0].health.stallAfter: must be a duration such as "500ms", "2s", "10m" or a number of seconds (got "soon")',
    ],
    [
      "a missing required field",
      { networks: [{ name: "x", chainId: 9 }] },
      "networks[0].reservedPeers: is required",
    ],
    [
      "duplicate network names",
      {
        networks: [
          { name: "x", chainId: 9, reservedPeers: [peer] },
          { name: "x", chainId: 9, reservedPeers: [peer] },
        ],
      },
      "networks[1].name: duplicate network name x (also networks[0])",
    ],
    [
      "duplicate reserved peer names",
      { networks: [{ name: "x", chainId: 9, reservedPeers: [peer, { ...peer }] }] },
      `networks[0].reservedPeers[1].name: duplicate peer name ${peer.name} (also reservedPeers[0])`,
    ],
    [
      "a name that is not a DNS label",
      { networks: [{ name: "Main Net", chainId: 1, reservedPeers: [peer] }] },
      "networks[0].name: must be a DNS label: lower-case letters, digits and '-'",
    ],
    [
      "fixed upstreams and a Service for one network",
      {
        networks: [
          {
            name: "x",
            chainId: 9,
            reservedPeers: [peer],
            gateway: { upstreams: [{ name: "a", http: "http://a:8545" }], service: { name: "light-x" } },
          },
        ],
      },
      "networks[0].gateway.service: set gateway.upstreams or gateway.service, not both",
    ],
  ])("reports %s", (_label, document, expected) => {
    expect(problemsOf(() => parseConfig(document, "t", {}))).toContain(expected);
  });

  it("takes gateway.sharedState in memory (the default) or in Redis, its URL from the environment", () => {
    expect(parseConfig({}, "t", {}).gateway.sharedState).toEqual({ backend: "memory" });
    const config = parseConfig({ gateway: { sharedState: { backend: "redis", url: "${REDIS_URL}" } } }, "t", {
      REDIS_URL: "rediss://:secret@redis.example.org:6380/2",
    });
    expect(config.gateway.sharedState).toEqual({
      backend: "redis",
      url: "rediss://:secret@redis.example.org:6380/2",
      keyPrefix: "lightfleet:",
      commandTimeout: 250,
    });
    expect(
      problemsOf(() =>
        parseConfig({ gateway: { sharedState: { backend: "redis", url: "http://r:6379" } } }, "t", {}),
      ),
    ).toEqual(["gateway.sharedState.url: must be a redis:// or rediss:// URL"]);
    expect(
      problemsOf(() => parseConfig({ gateway: { sharedState: { backend: "redis" } } }, "t", {})),
    ).toEqual([expect.stringMatching(/^gateway\.sharedState\.url: /)]);
    expect(problemsOf(() => parseConfig({ gateway: { sharedState: { backend: "etcd" } } }, "t", {}))).toEqual(
      [expect.stringMatching(/^gateway\.sharedState\.backend: .*memory.*redis/)],
    );
    expect(
      problemsOf(() =>
        parseConfig({ gateway: { sharedState: { backend: "redis", url: "${REDIS_URL}" } } }, "t", {}),
      ),
    ).toContain("gateway.sharedState.url: environment variable REDIS_URL is not set");
  });

  it("reports every problem at once", () => {
    const problems = problemsOf(() =>
      parseConfig(
        { networks: [{ name: "x", reservedPeers: [{ name: "p", http: "nope" }] }], extra: 1 },
        "t",
        {},
      ),
    );
    expect(problems).toEqual(
      expect.arrayContaining([
        "extra: unknown option",
        "networks[0].reservedPeers[0].http: must be an http(s) URL",
        "networks[0].chainId: is required when no preset is given",
      ]),
    );
  });

  it("reads secrets from the environment and lets the environment override the file", () => {
    const env = {
      PEER_URL: "https://full.example.org",
      DATABASE_URL: "postgres://u:p@db/keys",
      LIGHTFLEET_DATA_DIR: "/var/lib/lf",
    };
    const config = parseConfig(
      {
        networks: [{ name: "x", chainId: 7, reservedPeers: [{ name: "p", http: "${PEER_URL}" }] }],
        keys: { databaseUrl: "sqlite:a.db" },
      },
      "t",
      env,
    );
    expect(config.networks[0]!.reservedPeers[0]!.http).toBe("https://full.example.org");
    expect(config.keys.databaseUrl).toBe("postgres://u:p@db/keys");
    expect(config.dataDir).toBe("/var/lib/lf");
    expect(problemsOf(() => parseConfig({ keys: { databaseUrl: "${NOT_SET}" } }, "t", {}))).toEqual([
      "keys.databaseUrl: environment variable NOT_SET is not set",
    ]);
  });

  it("reports YAML syntax errors with their line", () => {
    expect(problemsOf(() => parseConfigText("networks:\n  - name: a\n   bad: [", "t", {}))[0]).toMatch(
      /^line \d+, column \d+: /,
    );
  });

  it("reports a missing file clearly", async () => {
    await expect(loadConfig("/nonexistent/lightfleet.yaml")).rejects.toThrow(/file not found/);
  });

  it("validates the annotated example file", async () => {
    const config = await loadConfig(join(import.meta.dirname, "../../examples/lightfleet.example.yaml"), {});
    expect(config.networks.map((n) => n.name)).toEqual(["mainnet"]);
  });

  it("loads a file from disk", async () => {
    const dir = await mkdtemp(join(tmpdir(), "lf-config-"));
    const file = join(dir, "c.yaml");
    await writeFile(
      file,
      "networks:\n  - name: hoodi\n    preset: hoodi\n    reservedPeers: [{name: f, http: 'http://127.0.0.1:1'}]\n",
    );
    expect((await loadConfig(file, {})).networks[0]!.chainId).toBe(560_048);
  });

  it("resolves the file's relative paths against the file's directory, and the environment's against the current one", async () => {
    const dir = await mkdtemp(join(tmpdir(), "lf-config-"));
    const file = join(dir, "c.yaml");
    await writeFile(file, "dataDir: ./state\nkeys: { databaseUrl: 'sqlite:db/keys.sqlite' }\n");
    const config = await loadConfig(file, {});
    expect(config.dataDir).toBe(join(dir, "state"));
    expect(config.keys.databaseUrl).toBe(`sqlite:${join(dir, "db/keys.sqlite")}`);
    // The default data directory sits beside the file too.
    await writeFile(file, "log: { level: info }\n");
    expect((await loadConfig(file, {})).dataDir).toBe(join(dir, "data"));
    // Absolute paths and PostgreSQL URLs are kept; the environment's relative paths are the caller's.
    await writeFile(file, "dataDir: /var/lib/lightfleet\nkeys: { databaseUrl: 'postgres://db/keys' }\n");
    expect((await loadConfig(file, {})).dataDir).toBe("/var/lib/lightfleet");
    expect((await loadConfig(file, {})).keys.databaseUrl).toBe("postgres://db/keys");
    const fromEnv = await loadConfig(file, { LIGHTFLEET_DATA_DIR: "rel", DATABASE_URL: "sqlite:k.sqlite" });
    expect(fromEnv.dataDir).toBe("rel");
    expect(fromEnv.keys.databaseUrl).toBe("sqlite:k.sqlite");
  });
});
