import { readFile } from "node:fs/promises";
import { ESLint } from "eslint";
import { describe, expect, it } from "vitest";
import { LAYERS } from "../../eslint/layers.js";

// The lint rule of eslint/layers.js, run through ESLint's API on code given as a string under a path in src/ (the file
// need not exist; what it imports does, so the resolver classifies it).
const eslint = new ESLint({ cwd: process.cwd() });

async function layerProblems(filePath: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath });
  return (result?.messages ?? []).filter((m) => m.ruleId?.startsWith("boundaries/")).map((m) => m.message);
}

describe("the layer lint rule", () => {
  it.each([
    [
      "src/rpc/fixture.ts",
      'import type { NodeState } from "../health/types.js";\nexport type S = NodeState;\n',
      /rpc may not import health/,
    ],
    [
      "src/fleet/process/fixture.ts",
      'import { startAnvil } from "../../devnet/anvil.js";\nexport const s = startAnvil;\n',
      /fleet may not import devnet/,
    ],
    [
      "src/scaling/fixture.ts",
      'import { makeApiClient } from "../kubernetes/api/kubeClients.js";\nexport const m = makeApiClient;\n',
      /scaling may not import kubernetes/,
    ],
    [
      "src/kubernetes/fixture.ts",
      'import type { UpstreamSource } from "../gateway/upstreams/upstreamSource.js";\nexport type U = UpstreamSource;\n',
      /kubernetes may not import gateway/,
    ],
    [
      "src/gateway/fixture.ts",
      'import { portOption } from "../cli/options.js";\nexport const p = portOption;\n',
      /gateway may not import cli/,
    ],
    [
      "src/keys/fixture.ts",
      'export const load = () => import("../gateway/gateway.js");\n',
      /keys may not import gateway/,
    ],
    [
      "src/chain/fixture.ts",
      'import type { Config } from "../config/schema.js";\nexport type C = Config;\n',
      /chain may not import config/,
    ],
  ])("refuses a wrong import in %s", async (filePath, code, message) => {
    const problems = await layerProblems(filePath, code);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(message);
    expect(problems[0]).toContain("docs/layers.md");
  });

  it.each([
    [
      "src/rpc/fixture.ts",
      'import type { BlockRef } from "../chain/blockRef.js";\nexport type B = BlockRef;\n',
    ],
    [
      "src/gateway/fixture.ts",
      'import { staleCache } from "../kubernetes/api/cacheFreshness.js";\nexport const s = staleCache;\n',
    ],
    [
      "src/cli/fixture.ts",
      'import { runUp } from "../up/runUp.js";\nimport { Command } from "commander";\nexport const r = [runUp, Command];\n',
    ],
    [
      "src/health/fixture.ts",
      'import { readFile } from "node:fs/promises";\nimport { NODE_STATES } from "./types.js";\nexport const r = [readFile, NODE_STATES];\n',
    ],
  ])("accepts an import down the layers or inside a folder in %s", async (filePath, code) => {
    expect(await layerProblems(filePath, code)).toEqual([]);
  });

  it("refuses a file in a folder that is in no layer", async () => {
    const problems = await layerProblems("src/newConcern/fixture.ts", "export const x = 1;\n");
    expect(problems.join("\n")).toMatch(/does not belong to any known element/);
  });

  it("is the order docs/layers.md draws", async () => {
    const doc = await readFile("docs/layers.md", "utf8");
    // Table rows "| N | `a`, `b` | ..." from the top layer down.
    const rows = [...doc.matchAll(/^\| (\d+) \| ([^|]+) \|/gm)].map((m) => ({
      layer: Number(m[1]),
      folders: [...(m[2] ?? "").matchAll(/`([a-z]+)\/?`/g)].map((f) => f[1]),
    }));
    const drawn = rows.sort((a, b) => a.layer - b.layer).map((r) => r.folders);
    expect(drawn).toEqual(LAYERS);
  });
});
