import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ConfigError } from "../../src/config/errors.js";
import { parseConfigText } from "../../src/config/loadConfig.js";
import { resolveDevnetOptions } from "../../src/devnet/devnetOptions.js";
import { GETH_MEMBER_COMMAND } from "../../src/devnet/geth/gethProcess.js";
import { DevnetInputError } from "../../src/devnet/errors.js";

const PEER = "reservedPeers: [{name: f, http: 'http://127.0.0.1:1'}]";

function problems(text: string): string[] {
  try {
    parseConfigText(text, "t", {});
  } catch (error) {
    if (error instanceof ConfigError) return error.problems.map((p) => `${p.path}: ${p.message}`);
    throw error;
  }
  return [];
}

describe("devnet config section", () => {
  it("parses durations and defaults, and leaves the section out when absent", () => {
    expect(parseConfigText("{}", "t", {}).devnet).toBeUndefined();
    const config = parseConfigText(
      "devnet:\n  blockTime: 500ms\n  networks:\n    - {name: a, chainId: 7, lightNodes: 2}\n",
      "t",
      {},
    );
    expect(config.devnet).toEqual({
      blockTime: 500,
      basePort: 0,
      networks: [{ name: "a", chainId: 7, fullNodes: 1, lightNodes: 2 }],
    });
  });

  it("names every problem by path", () => {
    expect(
      problems(
        "devnet:\n  blockTime: soon\n  basePort: 70000\n  extra: 1\n  networks:\n" +
          "    - {name: A, chainId: 0, fullNodes: 0}\n",
      ),
    ).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^devnet.blockTime: must be a duration/),
        expect.stringMatching(/^devnet.basePort: /),
        "devnet.extra: unknown option",
        expect.stringMatching(/^devnet.networks\[0\].name: must be a DNS label/),
        expect.stringMatching(/^devnet.networks\[0\].chainId: /),
        expect.stringMatching(/^devnet.networks\[0\].fullNodes: /),
      ]),
    );
    expect(
      problems("devnet:\n  networks:\n    - {name: b, chainId: 2}\n    - {name: b, chainId: 3}\n"),
    ).toEqual(["devnet.networks[1].name: duplicate devnet network name b (also networks[0])"]);
  });

  it("documents a valid section in the example file", async () => {
    const example = await readFile(
      join(import.meta.dirname, "../../examples/lightfleet.example.yaml"),
      "utf8",
    );
    const block = example.slice(example.indexOf("# devnet:"));
    const uncommented = block
      .split("\n")
      .filter((line) => /^# ( |devnet:)/.test(line) && !/^#\s+# /.test(line))
      .map((line) => line.slice(2))
      .join("\n");
    const config = parseConfigText(uncommented, "example", {});
    expect(config.devnet).toMatchObject({ blockTime: 2_000, basePort: 0, networks: [{ name: "devnet" }] });
  });
});

describe("resolveDevnetOptions", () => {
  it("defaults to one network devnet:31337 with a block every 2 s", () => {
    expect(resolveDevnetOptions(undefined, {})).toEqual({
      networks: [{ name: "devnet", chainId: 31_337 }],
      blockTimeMs: 2_000,
      basePort: 0,
    });
  });

  it("takes the config's devnet section, else its networks", () => {
    const withSection = parseConfigText(
      "devnet:\n  blockTime: 1s\n  basePort: 20000\n  genesisTimestamp: 1700000000\n  networks: [{name: x, chainId: 9}]\n",
      "t",
      {},
    );
    expect(resolveDevnetOptions(withSection, {})).toEqual({
      networks: [{ name: "x", chainId: 9, fullNodes: 1, lightNodes: 0 }],
      blockTimeMs: 1_000,
      basePort: 20_000,
      genesisTimestamp: 1_700_000_000,
    });
    const withNetworks = parseConfigText(`networks:\n  - {name: hoodi, preset: hoodi, ${PEER}}\n`, "t", {});
    expect(resolveDevnetOptions(withNetworks, {}).networks).toEqual([{ name: "hoodi", chainId: 560_048 }]);
  });

  it("lets flags win", () => {
    const config = parseConfigText("devnet:\n  networks: [{name: x, chainId: 9}]\n", "t", {});
    expect(
      resolveDevnetOptions(config, {
        network: ["a:1", "b:2"],
        fullNodes: "2",
        lightNodes: "1",
        blockTime: "250ms",
        basePort: "30000",
        genesisTimestamp: "1700000000",
      }),
    ).toEqual({
      networks: [
        { name: "a", chainId: 1, fullNodes: 2, lightNodes: 1 },
        { name: "b", chainId: 2, fullNodes: 2, lightNodes: 1 },
      ],
      blockTimeMs: 250,
      basePort: 30_000,
      genesisTimestamp: 1_700_000_000,
    });
    expect(resolveDevnetOptions(undefined, { blockTime: "0" }).blockTimeMs).toBe(0);
    expect(resolveDevnetOptions(undefined, { blockTime: "3" }).blockTimeMs).toBe(3_000);
  });

  it.each([
    [{ network: ["Alpha:1"] }, /--network must be NAME:CHAINID/],
    [{ network: ["a:0"] }, /--network must be NAME:CHAINID/],
    [{ network: ["a"] }, /--network must be NAME:CHAINID/],
    [{ fullNodes: "0" }, /--full-nodes must be a whole number of at least 1/],
    [{ lightNodes: "-1" }, /--light-nodes must be a whole number/],
    [{ blockTime: "fast" }, /--block-time must be a duration/],
    [{ basePort: "70000" }, /--base-port must be a port number/],
    [{ genesisTimestamp: "yesterday" }, /--genesis-timestamp must be a whole number/],
  ])("refuses %j", (flags, message) => {
    expect(() => resolveDevnetOptions(undefined, flags)).toThrow(DevnetInputError);
    expect(() => resolveDevnetOptions(undefined, flags)).toThrow(message);
  });
});

describe("the devnet's implementation", () => {
  it("is anvil unless the config or --implementation says geth, and --geth names the executable", () => {
    expect(resolveDevnetOptions(undefined, {}).implementation).toBeUndefined();
    const config = parseConfigText("devnet:\n  implementation: geth\n  gethBinary: /opt/geth\n", "t", {});
    expect(resolveDevnetOptions(config, {})).toMatchObject({
      implementation: "geth",
      gethBinary: "/opt/geth",
    });
    expect(resolveDevnetOptions(undefined, { implementation: "geth", geth: "/x/geth" })).toMatchObject({
      implementation: "geth",
      gethBinary: "/x/geth",
    });
    expect(resolveDevnetOptions(config, { implementation: "anvil" }).implementation).toBeUndefined();
  });

  it("refuses an unknown implementation and --geth without geth, saying what is accepted", () => {
    expect(() => resolveDevnetOptions(undefined, { implementation: "reth" })).toThrow(
      new DevnetInputError("--implementation must be anvil or geth (got reth)"),
    );
    expect(() => resolveDevnetOptions(undefined, { geth: "/x/geth" })).toThrow(
      /--geth applies to --implementation geth/,
    );
    expect(problems("devnet:\n  implementation: reth\n")).toEqual([
      expect.stringMatching(/^devnet\.implementation: .*"anvil"/),
    ]);
  });

  it("ships examples/devnet-geth.yaml, valid, with the member command the geth devnet expects", async () => {
    const text = await readFile(join(import.meta.dirname, "../../examples/devnet-geth.yaml"), "utf8");
    const config = parseConfigText(text, "devnet-geth.yaml", {});
    expect(config.devnet?.implementation).toBe("geth");
    expect(config.networks[0]!.nodes!.command).toEqual(GETH_MEMBER_COMMAND);
  });
});
