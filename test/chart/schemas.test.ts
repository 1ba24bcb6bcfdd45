import { readFile } from "node:fs/promises";
import { Ajv } from "ajv";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { healthSchema } from "../../src/config/sections/health.js";
import { networkGatewaySchema } from "../../src/config/sections/gateway.js";
import { scalingSchema } from "../../src/config/sections/scaling.js";
import { CHART_DIR, helm } from "../support/helm.js";
import { openApiToJsonSchema } from "./validateObject.js";
import { POOL_CRD, VALUES_SCHEMA, generatePoolCrd, generateValuesSchema } from "../support/schemas.js";

type Schema = { properties?: Record<string, Schema>; items?: Schema; [keyword: string]: unknown };

async function poolSpecSchema(): Promise<Schema> {
  const crd = parse(await readFile(POOL_CRD, "utf8")) as {
    spec: { versions: { schema: { openAPIV3Schema: Schema } }[] };
  };
  return crd.spec.versions[0]!.schema.openAPIV3Schema.properties!.spec!;
}

async function networkValuesSchema(): Promise<Schema> {
  const values = JSON.parse(await readFile(VALUES_SCHEMA, "utf8")) as Schema;
  return values.properties!.networks!.items!;
}

/** Every option of a config section with a valid value: the defaults, durations written as "2s", the rest set. */
function everyOption(
  defaults: Record<string, unknown>,
  durations: Set<string>,
  unset: Record<string, unknown>,
) {
  const options: Record<string, unknown> = { ...unset };
  for (const [key, value] of Object.entries(defaults)) {
    if (key in unset) continue;
    options[key] = durations.has(key) ? `${(value as number) / 1000}s` : value;
  }
  return options;
}

function durationKeys(schema: Schema): Set<string> {
  return new Set(
    Object.entries(schema.properties ?? {})
      .filter(([, s]) => typeof s.pattern === "string" && s.pattern.includes("ms|s|m|h"))
      .map(([key]) => key),
  );
}

/** A CRD schema as the API server applies it under strict field validation: unknown fields are errors. */
function strict(schema: Schema): Schema {
  const out: Schema = { ...schema };
  if (schema.properties) {
    out.properties = Object.fromEntries(Object.entries(schema.properties).map(([k, s]) => [k, strict(s)]));
    out.additionalProperties = false;
  }
  if (schema.items) out.items = strict(schema.items);
  return out;
}

const ajv = new Ajv({ strict: false, allErrors: true });

describe("the network part of values.schema.json and of the LightNodePool CRD", () => {
  it("is what `npm run schemas` generates from the config schema", async () => {
    expect(await readFile(VALUES_SCHEMA, "utf8"), "values.schema.json: run npm run schemas").toBe(
      await generateValuesSchema(),
    );
    expect(await readFile(POOL_CRD, "utf8"), "LightNodePool CRD: run npm run schemas").toBe(
      await generatePoolCrd(),
    );
  });

  it("names exactly the options of the config format's health, scaling and gateway sections", async () => {
    const spec = await poolSpecSchema();
    const network = await networkValuesSchema();
    const keys = (schema: Schema | undefined) => Object.keys(schema?.properties ?? {}).sort();
    expect(keys(spec.properties!.health)).toEqual(Object.keys(healthSchema.shape).sort());
    expect(keys(spec.properties!.scaling)).toEqual(Object.keys(scalingSchema.shape).sort());
    expect(keys(network.properties!.health)).toEqual(Object.keys(healthSchema.shape).sort());
    expect(keys(network.properties!.scaling)).toEqual(Object.keys(scalingSchema.shape).sort());
    expect(keys(network.properties!.gateway)).toEqual(Object.keys(networkGatewaySchema.shape).sort());
  });

  it("accepts every option of the config format and refuses an unknown one", async () => {
    const spec = await poolSpecSchema();
    const health = everyOption(
      healthSchema.parse({}) as Record<string, unknown>,
      durationKeys(spec.properties!.health!),
      // Options without a default (derived from the block time when left out).
      { maxLagSeconds: "30s", peerHaltAfter: "2m", stallAfter: "3m" },
    );
    const scaling = everyOption(
      scalingSchema.parse({}) as Record<string, unknown>,
      durationKeys(spec.properties!.scaling!),
      {
        source: { type: "prometheus", url: "http://prometheus:9090", query: "sum(x)", timeout: "5s" },
        cronFloors: [{ name: "day", start: "0 8 * * *", end: "0 20 * * *", timezone: "UTC", minReplicas: 2 }],
      },
    );
    expect(Object.keys(health).sort()).toEqual(Object.keys(healthSchema.shape).sort());
    const full = {
      network: "mainnet",
      chainId: 1,
      preset: "mainnet",
      blockTime: "12s",
      workloadRef: { kind: "StatefulSet", name: "nodes" },
      selector: { matchLabels: { app: "nodes" } },
      reservedPeers: [{ name: "full-0", http: "http://full-0:8545", ws: "ws://full-0:8546" }],
      health,
      scaling,
    };
    const validateSpec = ajv.compile(openApiToJsonSchema(strict(spec)) as object);
    expect(validateSpec(full), JSON.stringify(validateSpec.errors)).toBe(true);
    for (const [section, bogus] of [
      ["health", { ...health, bogus: 1 }],
      ["scaling", { ...scaling, bogus: 1 }],
    ] as const) {
      expect(validateSpec({ ...full, [section]: bogus }), section).toBe(false);
      expect(JSON.stringify(validateSpec.errors)).toContain("bogus");
    }
    expect(validateSpec({ ...full, health: { ...health, probeInterval: "soon" } })).toBe(false);

    const network = await networkValuesSchema();
    const validateNetwork = ajv.compile(network);
    const values = {
      name: "mainnet",
      preset: "mainnet",
      blockTime: 12,
      reservedPeers: [{ name: "full-0", http: "http://full-0:8545", enode: "enode://abc@10.0.0.1:30303" }],
      health,
      scaling,
      gateway: { hosts: ["rpc.example.org"], path: "/eth", default: true, getLogsMaxRange: 500 },
      pool: { workload: { kind: "Deployment", name: "nodes" }, selector: { app: "nodes" }, rpcPort: 8547 },
    };
    expect(validateNetwork(values), JSON.stringify(validateNetwork.errors)).toBe(true);
    expect(validateNetwork({ ...values, health: { ...health, bogus: 1 } })).toBe(false);
    expect(
      validateNetwork({ ...values, scaling: { ...scaling, source: { type: "gateway", url: "x" } } }),
    ).toBe(false);
  });

  it("stops helm with the path of an unknown or malformed network option", async () => {
    const base = [
      "networks[0].name=mainnet",
      "networks[0].preset=mainnet",
      "networks[0].reservedPeers[0].name=full-0",
      "networks[0].reservedPeers[0].http=http://full-0:8545",
      "networks[0].workload.enabled=true",
      "networks[0].workload.image.repository=client",
    ];
    const cases: [string, string][] = [
      ["networks[0].health.maxLagBlock=3", "/networks/0/health"],
      ["networks[0].health.restartAfter=soon", "/networks/0/health/restartAfter"],
      ["networks[0].scaling.scaleUpStep=0", "/networks/0/scaling/scaleUpStep"],
    ];
    for (const [bad, path] of cases) {
      const result = await helm(["template", "x", CHART_DIR, ...[...base, bad].flatMap((s) => ["--set", s])]);
      expect(result.code, bad).not.toBe(0);
      expect(result.stderr, bad).toContain(path);
    }
  });
});
