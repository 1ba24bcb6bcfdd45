import { readFile } from "node:fs/promises";
import { run } from "@bufbuild/cel";
import { Ajv } from "ajv";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { NETWORK_PRESETS } from "../../src/config/presets.js";
import { networkSchema } from "../../src/config/sections/network.js";
import { CHART_DIR, helm } from "../support/helm.js";
import { POOL_CRD, VALUES_SCHEMA } from "../support/schemas.js";
import { openApiToJsonSchema } from "./validateObject.js";

/**
 * One validation everywhere: a network the components refuse (the config format's zod schema, which the controller,
 * the gateway and the key API all parse) is refused first by the LightNodePool CRD (`kubectl apply`) and, for the
 * options a JSON Schema can compare on its own, by the chart's values schema (`helm install/upgrade`).
 */
type Schema = {
  properties?: Record<string, Schema>;
  items?: Schema;
  "x-kubernetes-validations"?: { rule: string; message: string }[];
  [keyword: string]: unknown;
};

const crdSpec = async () =>
  (
    parse(await readFile(POOL_CRD, "utf8")) as {
      spec: { versions: { schema: { openAPIV3Schema: Schema } }[] };
    }
  ).spec.versions[0]!.schema.openAPIV3Schema.properties!.spec!;
const valuesNetwork = async () =>
  (JSON.parse(await readFile(VALUES_SCHEMA, "utf8")) as Schema).properties!.networks!.items!;

/** A value as the API server hands it to CEL: objects are maps, integers ints. */
function celValue(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(celValue);
  if (value && typeof value === "object")
    return new Map(Object.entries(value).map(([k, v]) => [k, celValue(v)]));
  return Number.isInteger(value) ? BigInt(value as number) : value;
}

/** The messages of every CEL rule of SCHEMA (and below it) that refuses VALUE, as on a create. */
function celRefusals(schema: Schema, value: unknown): string[] {
  const out: string[] = [];
  for (const { rule, message } of schema["x-kubernetes-validations"] ?? []) {
    if (rule.includes("oldSelf")) continue;
    if (run(rule, { self: celValue(value) } as never) !== true) out.push(message);
  }
  if (value && typeof value === "object" && !Array.isArray(value))
    for (const [key, sub] of Object.entries(value))
      if (schema.properties?.[key]) out.push(...celRefusals(schema.properties[key], sub));
  if (Array.isArray(value) && schema.items)
    for (const sub of value) out.push(...celRefusals(schema.items, sub));
  return out;
}

const ajv = new Ajv({ strict: false, allErrors: true, logger: false });

const NETWORK = {
  name: "mainnet",
  chainId: 1,
  reservedPeers: [{ name: "full-0", http: "http://full-0:8545" }],
};
/** The network as a LightNodePool spec: the config keys, and the pool's own. */
const asPoolSpec = ({ name, ...rest }: Record<string, unknown>) => ({
  network: name,
  workloadRef: { kind: "StatefulSet", name: "light" },
  selector: { matchLabels: { app: "light" } },
  ...rest,
});

const MAX_LAG = [
  ["999ms", false],
  ["1000ms", true],
  ["0.999s", false],
  ["1s", true],
  ["1.0s", true],
  ["0.01m", false],
  ["0.0166m", false],
  ["0.0167m", true],
  ["0.02m", true],
  ["0.0002777h", false],
  ["0.0002778h", true],
  ["0.001h", true],
  ["1m", true],
  ["0s", false],
  [0, false],
  [1, true],
  [30, true],
] as const;

/** Bounds of single fields (the same check on each path, as the generated schemas carry the config's bounds). */
const FIELD_BOUNDS: Array<[string, Record<string, unknown>, boolean]> = [
  ["maxReplicas at its bound", { scaling: { maxReplicas: 1000 } }, true],
  ["maxReplicas beyond its bound", { scaling: { maxReplicas: 1001 } }, false],
  ["maxReplicas 0", { scaling: { maxReplicas: 0 } }, false],
  ["minReplicas at its bound", { scaling: { minReplicas: 1000, maxReplicas: 1000 } }, true],
  ["minReplicas beyond its bound", { scaling: { minReplicas: 1001 } }, false],
  ["maxLagBlocks 0", { health: { maxLagBlocks: 0 } }, false],
  ["maxLagBlocks 1", { health: { maxLagBlocks: 1 } }, true],
  ["systemicBadFraction 0", { health: { systemicBadFraction: 0 } }, false],
  ["systemicBadFraction 1", { health: { systemicBadFraction: 1 } }, true],
  ["tolerance 1", { scaling: { tolerance: 1 } }, false],
  ["tolerance 0.99", { scaling: { tolerance: 0.99 } }, true],
];

/** Cross-field rules: the CRD states them in CEL; a JSON Schema cannot compare one field with another. */
const CROSS_FIELD: Array<[string, Record<string, unknown>, boolean]> = [
  ["peerHaltAfter under two default block times", { health: { peerHaltAfter: "23s" } }, false],
  ["peerHaltAfter of two default block times", { health: { peerHaltAfter: "24s" } }, true],
  [
    "peerHaltAfter under two given block times",
    { blockTime: "2s", health: { peerHaltAfter: "3999ms" } },
    false,
  ],
  ["peerHaltAfter of two given block times", { blockTime: 2, health: { peerHaltAfter: 4 } }, true],
  [
    "stallAfter under two preset block times",
    { preset: "rinkeby", chainId: 4, health: { stallAfter: "29s" } },
    false,
  ],
  [
    "stallAfter of two preset block times",
    { preset: "rinkeby", chainId: 4, health: { stallAfter: "30s" } },
    true,
  ],
  ["stallAfter in minutes", { health: { stallAfter: "1m" } }, true],
  ["a chain id other than the preset's", { preset: "mainnet", chainId: 5 }, false],
  ["the preset's chain id", { preset: "goerli", chainId: 5 }, true],
  ["a deprecated preset", { preset: "ropsten", chainId: 3 }, false],
  ["a deprecated chain id", { chainId: 3 }, false],
  ["minReplicas over maxReplicas", { scaling: { minReplicas: 3, maxReplicas: 2 } }, false],
  ["minReplicas at maxReplicas", { scaling: { minReplicas: 2, maxReplicas: 2 } }, true],
  ["minReplicas over the default maxReplicas", { scaling: { minReplicas: 11 } }, false],
  ["two peers of one name", { reservedPeers: [NETWORK.reservedPeers[0], NETWORK.reservedPeers[0]] }, false],
  ...Object.entries(NETWORK_PRESETS).flatMap(
    ([preset, p]): Array<[string, Record<string, unknown>, boolean]> => [
      [`preset ${preset} with its chain id`, { preset, chainId: p.chainId }, !("deprecated" in p)],
      [`preset ${preset} with another chain id`, { preset, chainId: p.chainId + 1 }, false],
    ],
  ),
];

describe("one validation everywhere", () => {
  it("health.maxLagSeconds: the components, the values schema and the CRD agree at every unit's boundary", async () => {
    const values = ajv.compile(await valuesNetwork());
    const spec = await crdSpec();
    const crdShape = ajv.compile(openApiToJsonSchema(spec) as object);
    for (const [maxLagSeconds, valid] of MAX_LAG) {
      const network = { ...NETWORK, health: { maxLagSeconds } };
      const pool = asPoolSpec(network);
      const verdicts = {
        components: networkSchema.safeParse(network).success,
        values: values(network),
        crd: crdShape(pool) && celRefusals(spec, pool).length === 0,
      };
      expect({ maxLagSeconds, ...verdicts }).toEqual({
        maxLagSeconds,
        components: valid,
        values: valid,
        crd: valid,
      });
    }
  });

  it("bounds of single fields: the components, the values schema and the CRD agree", async () => {
    const values = ajv.compile(await valuesNetwork());
    const spec = await crdSpec();
    const crdShape = ajv.compile(openApiToJsonSchema(spec) as object);
    for (const [what, change, valid] of FIELD_BOUNDS) {
      const network = { ...NETWORK, ...change };
      const pool = asPoolSpec(network);
      expect({
        what,
        components: networkSchema.safeParse(network).success,
        values: values(network),
        crd: crdShape(pool) && celRefusals(spec, pool).length === 0,
      }).toEqual({ what, components: valid, values: valid, crd: valid });
    }
  });

  it("cross-field rules: the components and helm (the chart's template checks) agree, before any object changes", async () => {
    for (const [what, change, valid] of CROSS_FIELD) {
      const network = { ...NETWORK, ...change };
      const result = await helm([
        "template",
        "lf",
        CHART_DIR,
        "--namespace",
        "rpc",
        "--set-json",
        `networks=${JSON.stringify([{ ...network, workload: { enabled: true, image: { repository: "x" } } }])}`,
      ]);
      expect({ what, components: networkSchema.safeParse(network).success }).toEqual({
        what,
        components: valid,
      });
      expect({ what, helm: result.code === 0 }, result.stderr).toEqual({ what, helm: valid });
      if (!valid) expect(result.stderr).toMatch(/networks\[mainnet\]/);
    }
  });

  it("cross-field rules: the components and the CRD agree, and the CRD says why", async () => {
    const spec = await crdSpec();
    const crdShape = ajv.compile(openApiToJsonSchema(spec) as object);
    for (const [what, change, valid] of CROSS_FIELD) {
      const network = { ...NETWORK, ...change };
      const pool = asPoolSpec(network);
      const refusals = celRefusals(spec, pool);
      expect({ what, components: networkSchema.safeParse(network).success }).toEqual({
        what,
        components: valid,
      });
      expect({ what, crd: crdShape(pool) && refusals.length === 0 }).toEqual({ what, crd: valid });
      if (!valid) expect(refusals.join()).toMatch(/preset|chain id|block interval|maxReplicas|unique/);
    }
  });
});
