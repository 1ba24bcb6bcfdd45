import { describe, expect, it } from "vitest";
import { parseConfig } from "../../../src/config/loadConfig.js";
import { fillCommand } from "../../../src/fleet/process/commandTemplate.js";

describe("fillCommand", () => {
  it("fills every placeholder, computing lazy values only when used", () => {
    let computed = 0;
    const values = { port: "8600", name: "m-0", anvil: () => (computed++, "/bin/anvil") };
    expect(fillCommand(["{name}", "--port={port}"], values)).toEqual(["m-0", "--port=8600"]);
    expect(computed).toBe(0);
    expect(fillCommand(["{anvil}", "-p", "{port}"], values)).toEqual(["/bin/anvil", "-p", "8600"]);
    expect(computed).toBe(1);
  });

  it("names a placeholder that has no value, and says what genesisTimestamp needs", () => {
    expect(() => fillCommand(["{port}"], {})).toThrow("placeholder {port} has no value here");
    expect(() => fillCommand(["--timestamp", "{genesisTimestamp}"], {})).toThrow(/needs a devnet: section/);
  });
});

describe("networks[].nodes config", () => {
  it("rejects an unknown placeholder with its path", () => {
    expect(() =>
      parseConfig({
        networks: [
          {
            name: "devnet",
            chainId: 31_337,
            reservedPeers: [{ name: "full-0", http: "http://127.0.0.1:8600" }],
            nodes: { command: ["{anvil}", "--port", "{prot}"] },
          },
        ],
      }),
    ).toThrow(
      expect.objectContaining({
        problems: [
          {
            path: "networks[0].nodes.command[2]",
            message: expect.stringMatching(/^unknown placeholder \{prot\}/),
          },
        ],
      }),
    );
  });
});
