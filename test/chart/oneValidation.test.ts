import { readFile } from "node:fs/promises";
import { run } from "@bufbuild/cel";
import { Ajv } from "ajv";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { NETWORK_PRESETS } from "../../src/config/presets.js";
import { configSchema } from "../../src/config/schema.js";
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

/** A cron floor of MIN nodes on weekdays. */
const floor = (minReplicas: number) => ({ start: "0 8 * * 1-5", end: "0 20 * * 1-5", minReplicas });

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
  ["a cron floor over maxReplicas", { scaling: { maxReplicas: 3, cronFloors: [floor(4)] } }, false],
  ["a cron floor at maxReplicas", { scaling: { maxReplicas: 3, cronFloors: [floor(3)] } }, true],
  ["a cron floor over the default maxReplicas", { scaling: { cronFloors: [floor(5), floor(11)] } }, false],
  ...Object.entries(NETWORK_PRESETS).flatMap(
    ([preset, p]): Array<[string, Record<string, unknown>, boolean]> => [
      [`preset ${preset} with its chain id`, { preset, chainId: p.chainId }, !("deprecated" in p)],
      [`preset ${preset} with another chain id`, { preset, chainId: p.chainId + 1 }, false],
    ],
  ),
];

/**
 * Cross-field rules of the gateway's options: a pool does not carry them (the gateway reads them from its config), so
 * helm's template checks are the one place before a gateway pod that can refuse them.
 */
const GATEWAY_CROSS_FIELD: Array<[string, Record<string, unknown>, boolean]> = [
  ["hedge.minDelay over the default maxDelay", { gateway: { hedge: { minDelay: "2s" } } }, false],
  ["hedge.minDelay over maxDelay", { gateway: { hedge: { minDelay: 0.5, maxDelay: "499ms" } } }, false],
  ["hedge.minDelay at maxDelay", { gateway: { hedge: { minDelay: 0.5, maxDelay: "500ms" } } }, true],
  ["hungNodes.min over the default max", { gateway: { hungNodes: { min: "1501ms" } } }, false],
  ["hungNodes.max under the default min", { gateway: { hungNodes: { max: "0.2s" } } }, false],
  ["hungNodes.min at max", { gateway: { hungNodes: { min: "1m", max: 60 } } }, true],
];

/** `helm template` of NETWORKS (each with a workload); its exit code and stderr. */
const template = (networks: Array<Record<string, unknown>>) =>
  helm([
    "template",
    "lf",
    CHART_DIR,
    "--namespace",
    "rpc",
    "--set-json",
    `networks=${JSON.stringify(networks.map((n) => ({ ...n, workload: { enabled: true, image: { repository: "x" } } })))}`,
  ]);

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

  it("every bounded number and duration of a network: the components, the values schema and the CRD agree at its bounds", async () => {
    const valuesSchema = await valuesNetwork();
    const values = ajv.compile(valuesSchema);
    const spec = await crdSpec();
    const crdShape = ajv.compile(openApiToJsonSchema(spec) as object);
    /** Every leaf of the values schema's network that is a number or a duration, by path. */
    const leaves: Array<{ path: string[]; schema: Schema }> = [];
    const walk = (schema: Schema, path: string[]) => {
      if (schema.properties)
        for (const [key, sub] of Object.entries(schema.properties)) walk(sub, [...path, key]);
      else leaves.push({ path, schema });
    };
    for (const key of ["chainId", "blockTime", "health", "gateway", "scaling"])
      walk(valuesSchema.properties![key]!, [key]);
    const durations = [
      "0s",
      "0ms",
      "1ms",
      "0.5s",
      "1s",
      "-1s",
      "1m",
      "1h",
      "10000h",
      0,
      0.001,
      0.5,
      1,
      -1,
      1e9,
    ];
    let checked = 0;
    const disagreements: string[] = [];
    for (const { path, schema } of leaves) {
      const types = ([] as unknown[]).concat(schema.type);
      const isDuration = types.includes("string") && (types.includes("number") || types.includes("integer"));
      if (!isDuration && !types.includes("number") && !types.includes("integer")) continue;
      const candidates: unknown[] = isDuration ? [...durations] : [-1, 0, 0.5, 1, 2, 1.5, 1000, 1001, 1e6];
      for (const bound of [schema.minimum, schema.maximum])
        if (typeof bound === "number")
          candidates.push(bound - 1, bound - 0.001, bound, bound + 0.001, bound + 1);
      for (const value of candidates) {
        const network: Record<string, unknown> = structuredClone(NETWORK);
        let at = network;
        for (const key of path.slice(0, -1)) at = (at[key] ??= {}) as Record<string, unknown>;
        at[path.at(-1)!] = value;
        const parsed = networkSchema.safeParse(network);
        // A refusal for a relation between fields is held by the cross-field cases (helm's template checks, CEL).
        if (!parsed.success && parsed.error.issues.every((i) => i.code === "custom")) continue;
        const verdicts: Record<string, boolean> = { components: parsed.success, values: values(network) };
        // The pool carries the network's keys but the gateway's options (the gateway reads those from its config).
        if (path[0] !== "gateway") {
          const pool = asPoolSpec(network);
          verdicts.crd = crdShape(pool) && celRefusals(spec, pool).length === 0;
        }
        checked++;
        // A fraction of a second as a number the components read (0.5 is 500ms), but a pool's int-or-string field
        // takes a whole number or a string: refused by the CRD, and so by the values schema first ("500ms" is fine).
        const fraction =
          isDuration && typeof value === "number" && !Number.isInteger(value) && path[0] !== "gateway";
        const expected = fraction ? false : parsed.success;
        if (
          Object.entries(verdicts).some(
            ([who, v]) => v !== (who === "components" ? parsed.success : expected),
          )
        )
          disagreements.push(`${path.join(".")}=${JSON.stringify(value)}: ${JSON.stringify(verdicts)}`);
      }
    }
    expect(disagreements).toEqual([]);
    expect(checked).toBeGreaterThan(300);
  });

  it("the chart's config value: an unknown key and every bounded number and duration of a section, as the components judge them", async () => {
    const config = ajv.compile(
      (JSON.parse(await readFile(VALUES_SCHEMA, "utf8")) as Schema).properties!.config!,
    );
    const schema = (JSON.parse(await readFile(VALUES_SCHEMA, "utf8")) as Schema).properties!.config!;
    const cases: Array<[string[], unknown]> = [
      [["controller", "bogus"], 1],
      [["gateway", "bogus"], true],
      [["bogus"], {}],
    ];
    const walk = (sub: Schema, path: string[]) => {
      if (sub.properties) for (const [key, s2] of Object.entries(sub.properties)) walk(s2, [...path, key]);
      const types = ([] as unknown[]).concat(sub.type);
      if (types.includes("string") && types.includes("number"))
        for (const value of ["-1s", "0s", "1ms", "1s", "nonsense", -1, 0, 0.5, 1]) cases.push([path, value]);
      else if (types.includes("number") || types.includes("integer"))
        for (const value of [-1, 0, 0.5, 1, 1.5, 65_535, 65_536, sub.minimum, sub.maximum])
          if (typeof value === "number") cases.push([path, value]);
    };
    for (const key of ["log", "admin", "gateway", "keys", "controller"])
      walk(schema.properties![key]!, [key]);
    const disagreements: string[] = [];
    for (const [path, value] of cases) {
      const override: Record<string, unknown> = {};
      let at = override;
      for (const key of path.slice(0, -1)) at = (at[key] = {}) as Record<string, unknown>;
      at[path.at(-1)!] = value;
      const parsed = configSchema.safeParse(override);
      // A relation between fields (or with the rest of the config) is the components' to judge.
      if (!parsed.success && parsed.error.issues.every((i) => i.code === "custom")) continue;
      if (config(override) !== parsed.success)
        disagreements.push(`config.${path.join(".")}=${JSON.stringify(value)}: components ${parsed.success}`);
    }
    expect(disagreements).toEqual([]);
    expect(cases.length).toBeGreaterThan(100);
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

  it("cross-field rules of the gateway's options: the components and helm agree, before any object changes", async () => {
    for (const [what, change, valid] of GATEWAY_CROSS_FIELD) {
      const network = { ...NETWORK, ...change };
      const result = await template([network]);
      expect({ what, components: networkSchema.safeParse(network).success }).toEqual({
        what,
        components: valid,
      });
      expect({ what, helm: result.code === 0 }, result.stderr).toEqual({ what, helm: valid });
      if (!valid)
        expect(result.stderr).toMatch(/networks\[mainnet\]\.gateway\.(hedge\.minDelay|hungNodes\.min)/);
    }
  });

  it("rules across networks: one gateway default at most, in the components and in helm", async () => {
    const second = { ...NETWORK, name: "sepolia", chainId: 11_155_111 };
    for (const [what, networks, valid] of [
      [
        "two defaults",
        [
          { ...NETWORK, gateway: { default: true } },
          { ...second, gateway: { default: true } },
        ],
        false,
      ],
      ["one default", [{ ...NETWORK, gateway: { default: true } }, second], true],
    ] as const) {
      const result = await template([...networks]);
      expect({ what, components: configSchema.safeParse({ networks }).success }).toEqual({
        what,
        components: valid,
      });
      expect({ what, helm: result.code === 0 }, result.stderr).toEqual({ what, helm: valid });
      if (!valid) expect(result.stderr).toMatch(/only one network may be the gateway default/);
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
      if (!valid)
        expect(refusals.join()).toMatch(/preset|chain id|block interval|maxReplicas|unique|cron floor/);
    }
  });
});
