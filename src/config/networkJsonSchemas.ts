/**
 * The network part of the config format as JSON Schema, for the two other places a network is written: the Helm
 * chart's values.schema.json (networks[]) and the LightNodePool CRD (spec); and the rest of the format for the chart's
 * `config` value. All are generated from the zod schema (`npm run schemas`), so an option the config format gains is
 * accepted there too, and an unknown one is refused.
 */
import { z } from "zod";
import { DURATION_PATTERN, duration } from "./duration.js";
import { adminSchema } from "./sections/admin.js";
import { controllerSchema } from "./sections/controller.js";
import { gatewaySchema } from "./sections/gateway.js";
import { keysSchema } from "./sections/keys.js";
import { logSchema } from "./sections/log.js";
import { healthSchema, TIMESTAMP_RESOLUTION_MS } from "./sections/health.js";
import { NETWORK_PRESETS } from "./presets.js";
import { networkSchema, peerSchema } from "./sections/network.js";
import { scalingSchema } from "./sections/scaling.js";
import { httpUrl, wsUrl } from "./urls.js";

export type JsonSchema = { [keyword: string]: unknown };

/** The scaling defaults a CEL rule must assume for an option left out. */
const DEFAULT_SCALING = scalingSchema.parse({});

/** Network keys of the config format the chart and the pool carry; `nodes` (the process fleet) is `up`'s alone. */
const NETWORK_KEYS = [
  "name",
  "preset",
  "chainId",
  "blockTime",
  "reservedPeers",
  "health",
  "gateway",
  "scaling",
];

/** Regular-expression stand-ins for the checks zod runs in code (URL parsing), so the JSON side checks them too. */
const PATTERNS = new Map<unknown, string>([
  [httpUrl, "^https?://"],
  [wsUrl, "^wss?://"],
]);

function generate(schema: z.ZodType, target: "draft-07" | "openapi-3.0", crd: boolean): JsonSchema {
  return z.toJSONSchema(schema, {
    io: "input",
    target,
    reused: "inline",
    override: ({ zodSchema, jsonSchema }) => {
      const json = jsonSchema as JsonSchema;
      if (zodSchema === duration) {
        // "2s" or a number of seconds. A CRD types it int-or-string (structural schemas take one type per field).
        for (const key of Object.keys(json)) delete json[key];
        Object.assign(json, crd ? { "x-kubernetes-int-or-string": true } : { type: ["number", "string"] }, {
          minimum: 0,
          pattern: DURATION_PATTERN.source,
        });
      }
      const pattern = PATTERNS.get(zodSchema);
      if (pattern) json.pattern = pattern;
    },
  }) as JsonSchema;
}

/** Drops what neither file wants: defaults (the program applies them), and zod's safe-integer bounds. */
function tidy(schema: JsonSchema, crd: boolean): JsonSchema {
  const out: JsonSchema = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key === "default" || key === "$schema") continue;
    if ((key === "maximum" || key === "minimum") && Math.abs(value as number) === Number.MAX_SAFE_INTEGER)
      continue;
    // A CRD may not say additionalProperties: false; the API server prunes unknown fields (or refuses them
    // under strict field validation, kubectl's default) from the properties listed.
    if (crd && key === "additionalProperties" && value === false) continue;
    if (key === "format" && value === "starts_with") continue;
    if (key === "properties") {
      out.properties = Object.fromEntries(
        Object.entries(value as Record<string, JsonSchema>).map(([name, sub]) => [name, tidy(sub, crd)]),
      );
    } else if (key === "items" || (key === "additionalProperties" && typeof value === "object")) {
      out[key] = tidy(value as JsonSchema, crd);
    } else if (key === "oneOf" || key === "anyOf" || key === "allOf") {
      out[key] = (value as JsonSchema[]).map((sub) => tidy(sub, crd));
    } else out[key] = value;
  }
  if (crd && out.type === "integer" && out.exclusiveMinimum === true) {
    out.minimum = (out.minimum as number) + 1;
    delete out.exclusiveMinimum;
  }
  // An open bound of a number as a CEL rule: OpenAPI 3.0's boolean exclusiveMinimum is one more dialect for every
  // schema tool in between to get wrong, and a rule says what is wrong in words.
  if (crd && out.type === "number") {
    const rules: { rule: string; message: string }[] = [];
    for (const [exclusive, bound, op, words] of [
      ["exclusiveMinimum", "minimum", ">", "greater than"],
      ["exclusiveMaximum", "maximum", "<", "less than"],
    ] as const) {
      if (out[exclusive] !== true) continue;
      const limit = out[bound] as number;
      rules.push({
        rule: `self ${op} ${Number.isInteger(limit) ? `${limit}.0` : limit}`,
        message: `must be ${words} ${limit}`,
      });
      delete out[exclusive];
      delete out[bound];
    }
    if (rules.length > 0) out["x-kubernetes-validations"] = rules;
  }
  if (crd && Array.isArray(out.oneOf)) return mergeVariants(out, "type");
  return out;
}

/**
 * A discriminated union as one structural object (a CRD field has one shape): every variant's properties, the
 * discriminator's values as an enum, and a CEL rule per variant for its required and foreign fields.
 */
function mergeVariants(schema: JsonSchema, discriminator: string): JsonSchema {
  const variants = (schema.oneOf as JsonSchema[]).map((variant) => {
    const own = variant.properties as Record<string, JsonSchema>;
    const required = ((variant.required ?? []) as string[]).filter((name) => name !== discriminator);
    return { value: (own[discriminator]!.enum as string[])[0]!, own, required };
  });
  const properties: Record<string, JsonSchema> = {};
  for (const { own } of variants)
    for (const [name, property] of Object.entries(own))
      if (name !== discriminator) properties[name] = property;
  const validations = variants.flatMap(({ value, own, required }) => {
    const foreign = Object.keys(properties).filter((name) => !(name in own));
    const conditions = [...required.map((n) => `has(self.${n})`), ...foreign.map((n) => `!has(self.${n})`)];
    if (conditions.length === 0) return [];
    const says = [
      required.length ? `needs ${required.join(", ")}` : "",
      foreign.length ? `takes no ${foreign.join(", ")}` : "",
    ].filter(Boolean);
    return [
      {
        rule: `self.${discriminator} != '${value}' || (${conditions.join(" && ")})`,
        message: `${discriminator} ${value} ${says.join(" and ")}`,
      },
    ];
  });
  return {
    type: "object",
    required: [discriminator],
    properties: { [discriminator]: { type: "string", enum: variants.map((v) => v.value) }, ...properties },
    "x-kubernetes-validations": validations,
  };
}

/**
 * A duration written as text of one second or more: the floor timeThresholdProblems puts under maxLagSeconds, as a
 * regular expression (the values schema has no other way to compare a string). Per unit: ms from 1000, s from 1,
 * m from 1/60 (0.01666... repeating: 0.0167 is the first longer), h from 1/3600 (0.000277...: 0.0002778).
 */
const AT_LEAST_ONE_SECOND = [
  String.raw`0*[1-9]\d{3,}(\.\d+)?ms`,
  String.raw`0*[1-9]\d*(\.\d+)?s`,
  String.raw`(0*[1-9]\d*(\.\d+)?|0+\.(0[2-9]|[1-9]|016*[7-9])\d*)m`,
  String.raw`(0*[1-9]\d*(\.\d+)?|0+\.(000[3-9]|0002[89]|00027+[89]|00[1-9]|0[1-9]|[1-9])\d*)h`,
];

/** The same floor, for a CRD's CEL rule over an int-or-string duration. */
function celDuration(expr: string): string {
  return `(type(${expr}) == int ? duration(string(${expr}) + 's') : duration(${expr}))`;
}

/** Health options whose value has a floor of its own (not relative to the block time). */
function withDurationFloors(health: JsonSchema, crd: boolean): JsonSchema {
  if (TIMESTAMP_RESOLUTION_MS !== 1_000) throw new Error("AT_LEAST_ONE_SECOND assumes a one-second floor");
  const properties = { ...(health.properties as Record<string, JsonSchema>) };
  const maxLag = properties.maxLagSeconds!;
  const message =
    "maxLagSeconds must be 1s or more: block timestamps are whole seconds, so nodes in sync would flap out of routing";
  properties.maxLagSeconds = crd
    ? {
        ...maxLag,
        "x-kubernetes-validations": [{ rule: `${celDuration("self")} >= duration('1s')`, message }],
      }
    : { ...maxLag, minimum: 1, allOf: [{ pattern: `^(${AT_LEAST_ONE_SECOND.join("|")})$` }] };
  return { ...health, properties };
}

/**
 * The cross-field rules of networkSchema a CRD can state in CEL: the preset's chain id, no deprecated network, and
 * peerHaltAfter and stallAfter beyond two block intervals (blockTime, else the preset's, else 12s).
 */
export function poolSpecRules(): Array<{ rule: string; message: string }> {
  const presets = Object.entries(NETWORK_PRESETS);
  const chainIds = `{${presets.map(([name, p]) => `'${name}': ${p.chainId}`).join(", ")}}`;
  const blockTimes = `{${presets.map(([name, p]) => `'${name}': duration('${p.blockTimeMs}ms')`).join(", ")}}`;
  const blockTime = `(has(self.blockTime) ? ${celDuration("self.blockTime")} : has(self.preset) ? ${blockTimes}[self.preset] : duration('12s'))`;
  const deprecated = presets.filter(([, p]) => "deprecated" in p);
  const beyondTwoBlocks = (option: string, words: string) => ({
    rule: `!has(self.health) || !has(self.health.${option}) || ${celDuration(`self.health.${option}`)} - ${blockTime} >= ${blockTime}`,
    message: `health.${option} must be at least two block intervals (blockTime, else the preset's, else 12s): ${words}`,
  });
  return [
    {
      rule: `!has(self.preset) || ${chainIds}[self.preset] == self.chainId`,
      message: "chainId must be the preset's chain id",
    },
    ...deprecated.map(([name, p]) => ({
      rule: `(!has(self.preset) || self.preset != '${name}') && self.chainId != ${p.chainId}`,
      message: (p as { deprecated: string }).deprecated,
    })),
    beyondTwoBlocks("peerHaltAfter", "the ordinary wait for the next block would read as a network halt"),
    beyondTwoBlocks("stallAfter", "a node waiting for the next block would read as stalled"),
  ];
}

/**
 * Durations in SCHEMA (and below it) as the LightNodePool CRD takes them: a string or a whole number of seconds. A
 * fraction (0.5) the config format reads as 500ms; the API server's int-or-string refuses it, so the chart would fail
 * halfway through an upgrade, at the pool, after other objects changed. Refused at once instead: write "500ms".
 */
function wholeSecondsOnly(schema: JsonSchema): JsonSchema {
  const out: JsonSchema = { ...schema };
  if (out.pattern === DURATION_PATTERN.source && Array.isArray(out.type)) out.type = ["integer", "string"];
  if (out.properties)
    out.properties = Object.fromEntries(
      Object.entries(out.properties as Record<string, JsonSchema>).map(([key, sub]) => [
        key,
        wholeSecondsOnly(sub),
      ]),
    );
  if (out.items) out.items = wholeSecondsOnly(out.items as JsonSchema);
  return out;
}

/** JSON Schema (draft-07) of one networks[] entry's config keys, for values.schema.json. */
export function networkValuesSchema(): JsonSchema {
  const network = tidy(generate(networkSchema, "draft-07", false), false);
  const properties = network.properties as Record<string, JsonSchema>;
  properties.health = withDurationFloors(properties.health!, false);
  // The keys the chart writes into the LightNodePool too.
  for (const key of ["blockTime", "health", "scaling"]) properties[key] = wholeSecondsOnly(properties[key]!);
  return {
    ...network,
    properties: Object.fromEntries(NETWORK_KEYS.map((key) => [key, properties[key]!])),
  };
}

/**
 * Structural OpenAPI schemas of the LightNodePool spec fields that come from the config format. reservedPeers
 * names are optional there (the controller names an unnamed peer by its position).
 */
export function poolSpecSchemas(): Record<string, JsonSchema> {
  const crd = (schema: z.ZodType) => tidy(generate(schema, "openapi-3.0", true), true);
  const network = crd(networkSchema).properties as Record<string, JsonSchema>;
  const peer = crd(peerSchema);
  const scaling = crd(scalingSchema);
  return {
    network: {
      ...network.name!,
      maxLength: 63,
      // A pool's metrics, LightNodes and gateway routes are its network's: another network is another pool.
      "x-kubernetes-validations": [
        {
          rule: "self == oldSelf",
          message: "spec.network cannot be changed; create a LightNodePool for the other network",
        },
      ],
    },
    preset: network.preset!,
    chainId: { ...network.chainId!, format: "int64" },
    blockTime: network.blockTime!,
    reservedPeers: {
      type: "array",
      minItems: 1,
      // Bounded, so that CEL rules over the spec stay within the API server's cost budget.
      maxItems: 16,
      items: {
        ...peer,
        // A DNS label's bound (its pattern says as much), stated, so the API server can cost the rule below.
        properties: {
          ...(peer.properties as Record<string, JsonSchema>),
          name: { ...(peer.properties as Record<string, JsonSchema>).name!, maxLength: 63 },
        },
        required: ["http"],
      },
      "x-kubernetes-validations": [
        {
          rule: "self.all(p, !has(p.name) || self.filter(q, has(q.name) && q.name == p.name).size() == 1)",
          message: "reserved peer names must be unique",
        },
      ],
    },
    health: withDurationFloors(crd(healthSchema), true),
    scaling: {
      ...scaling,
      "x-kubernetes-validations": [
        {
          rule: `!has(self.minReplicas) || self.minReplicas <= (has(self.maxReplicas) ? self.maxReplicas : ${DEFAULT_SCALING.maxReplicas})`,
          message: `minReplicas must not exceed maxReplicas (default ${DEFAULT_SCALING.maxReplicas})`,
        },
        {
          rule: `!has(self.cronFloors) || self.cronFloors.all(f, f.minReplicas <= (has(self.maxReplicas) ? self.maxReplicas : ${DEFAULT_SCALING.maxReplicas}))`,
          message: `a cron floor's minReplicas must not exceed maxReplicas (default ${DEFAULT_SCALING.maxReplicas})`,
        },
      ],
    },
  };
}

/** Drops `required` in SCHEMA and everything below it: for an object the chart renders, which `config` is merged over. */
function nothingRequired(schema: JsonSchema): JsonSchema {
  const out: JsonSchema = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key === "required") continue;
    if (key === "properties")
      out.properties = Object.fromEntries(
        Object.entries(value as Record<string, JsonSchema>).map(([name, sub]) => [
          name,
          nothingRequired(sub),
        ]),
      );
    else if (key === "items" || (key === "additionalProperties" && typeof value === "object"))
      out[key] = nothingRequired(value as JsonSchema);
    else if (key === "oneOf" || key === "anyOf" || key === "allOf")
      out[key] = (value as JsonSchema[]).map(nothingRequired);
    else out[key] = value;
  }
  return out;
}

/** Objects of each config section the chart renders from its own values (see lightfleet.config in _helpers.tpl). */
const CHART_RENDERED: Record<string, string[]> = { gateway: ["sharedState"], controller: ["gatewayService"] };

/**
 * JSON Schema (draft-07) of the chart's `config` value: the config format's sections but the networks (they come from
 * `networks`), so an unknown key or a value out of bounds stops `helm install/upgrade` instead of a component at start.
 */
export function configValuesSchema(): JsonSchema {
  const sections: Record<string, z.ZodType> = {
    dataDir: z.string().min(1),
    log: logSchema,
    admin: adminSchema,
    gateway: gatewaySchema,
    keys: keysSchema,
    controller: controllerSchema,
  };
  return {
    type: "object",
    description: "Merged over the rendered lightfleet config (networks come from `networks`)",
    properties: {
      ...Object.fromEntries(
        Object.entries(sections).map(([key, schema]) => {
          const json = tidy(generate(schema, "draft-07", false), false);
          // The chart renders these whole, so an override may name one field of them; other objects (a rateLimit)
          // it does not write keep their required fields.
          const rendered = CHART_RENDERED[key] ?? [];
          const properties = { ...(json.properties as Record<string, JsonSchema> | undefined) };
          for (const name of rendered)
            if (properties[name]) properties[name] = nothingRequired(properties[name]);
          const { required: _sectionRequired, ...section } = json;
          return [key, json.properties ? { ...section, properties } : section];
        }),
      ),
      networks: { not: {} },
    },
    additionalProperties: false,
  };
}
