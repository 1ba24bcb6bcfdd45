import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { parseDocument } from "yaml";
import {
  configValuesSchema,
  networkValuesSchema,
  poolSpecRules,
  poolSpecSchemas,
} from "../../src/config/networkJsonSchemas.js";
import type { JsonSchema } from "../../src/config/networkJsonSchemas.js";
import { CHART_DIR } from "./helm.js";

/**
 * The network part of charts/lightfleet/values.schema.json and of the LightNodePool CRD, generated from the config
 * format's zod schema (src/config/networkJsonSchemas.ts). Regenerate with `npm run schemas`;
 * test/chart/schemas.test.ts fails when the committed files differ from what this makes.
 */
export const VALUES_SCHEMA = join(CHART_DIR, "values.schema.json");
export const POOL_CRD = join(CHART_DIR, "crds/lightnodepools.lightfleet.io.yaml");

/** Keys of a networks[] entry that only the chart knows (the rest is the config format's). */
const CHART_ONLY_NETWORK_KEYS = ["workload", "pool"];

/** values.schema.json with networks[] items rebuilt from the config schema, the chart-only keys kept as written. */
export async function generateValuesSchema(): Promise<string> {
  const values = JSON.parse(await readFile(VALUES_SCHEMA, "utf8")) as JsonSchema;
  const networks = (values.properties as Record<string, JsonSchema>).networks!;
  const current = networks.items as JsonSchema & { properties: Record<string, JsonSchema> };
  const generated = networkValuesSchema() as JsonSchema & { properties: Record<string, JsonSchema> };
  const peers = generated.properties.reservedPeers!;
  const peer = peers.items as JsonSchema & { properties: Record<string, JsonSchema> };
  // enode is chart-only: it goes to the light nodes' arguments, not to lightfleet.
  peer.properties.enode = { type: "string", pattern: "^enode://" };
  const items = {
    ...current,
    properties: {
      ...generated.properties,
      reservedPeers: { ...peers, minItems: 1 },
      ...Object.fromEntries(CHART_ONLY_NETWORK_KEYS.map((key) => [key, current.properties[key]])),
    },
    additionalProperties: false,
    // The chart has no devnet to stand in for the peers, so a network always names them.
    required: ["name", "reservedPeers"],
  };
  networks.items = items;
  (values.properties as Record<string, JsonSchema>).config = configValuesSchema();
  return `${JSON.stringify(values, null, 2)}\n`;
}

/**
 * The LightNodePool CRD with the spec fields that come from the config format regenerated. Descriptions (for
 * `kubectl explain`) are written in the CRD and kept for every field that still exists.
 */
export async function generatePoolCrd(): Promise<string> {
  const doc = parseDocument(await readFile(POOL_CRD, "utf8"));
  const spec = ["spec", "versions", 0, "schema", "openAPIV3Schema", "properties", "spec", "properties"];
  for (const [field, schema] of Object.entries(poolSpecSchemas())) {
    const written = doc.getIn([...spec, field]) as { toJSON(): JsonSchema } | undefined;
    doc.setIn([...spec, field], doc.createNode(withDescriptions(schema, written?.toJSON())));
  }
  // The config format's cross-field rules, over the whole spec.
  doc.setIn([...spec.slice(0, -1), "x-kubernetes-validations"], doc.createNode(poolSpecRules()));
  return doc.toString({ lineWidth: 118, flowCollectionPadding: false });
}

/** SCHEMA with the descriptions of WRITTEN (the same field as it stands in the file) at the same places. */
function withDescriptions(schema: JsonSchema, written: JsonSchema | undefined): JsonSchema {
  if (!written) return schema;
  const out: JsonSchema = typeof written.description === "string" ? { description: written.description } : {};
  for (const [key, value] of Object.entries(schema)) {
    if (key === "properties") {
      const known = (written.properties ?? {}) as Record<string, JsonSchema>;
      out.properties = Object.fromEntries(
        Object.entries(value as Record<string, JsonSchema>).map(([name, sub]) => [
          name,
          withDescriptions(sub, known[name]),
        ]),
      );
    } else if (key === "items") {
      out.items = withDescriptions(value as JsonSchema, written.items as JsonSchema | undefined);
    } else out[key] = value;
  }
  return out;
}

async function writeSchemas(): Promise<void> {
  await writeFile(VALUES_SCHEMA, await generateValuesSchema());
  console.log(`wrote ${VALUES_SCHEMA}`);
  await writeFile(POOL_CRD, await generatePoolCrd());
  console.log(`wrote ${POOL_CRD}`);
}

if (process.argv[1] && import.meta.filename === process.argv[1]) {
  writeSchemas().catch((error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  });
}
