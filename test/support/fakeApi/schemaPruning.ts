/**
 * What the API server does to a custom resource with its CRD's structural schema before storing it: unknown fields are
 * pruned (except under `x-kubernetes-preserve-unknown-fields: true`; apiVersion, kind and metadata at the root and in
 * embedded resources are kept), then `default`s fill fields that are absent. Value validation (types, patterns,
 * CEL rules) is not modelled here.
 */
export type Schema = {
  type?: string;
  properties?: Record<string, Schema>;
  additionalProperties?: Schema | boolean;
  items?: Schema;
  default?: unknown;
  "x-kubernetes-preserve-unknown-fields"?: boolean;
  "x-kubernetes-embedded-resource"?: boolean;
  [keyword: string]: unknown;
};

const ROOT_FIELDS = ["apiVersion", "kind", "metadata"];

/** The object pruned and defaulted by `schema` (its openAPIV3Schema); a new object, the input is left alone. */
export function pruneAndDefault(schema: Schema, object: Record<string, unknown>): Record<string, unknown> {
  return walk(schema, structuredClone(object), true) as Record<string, unknown>;
}

function walk(schema: Schema, value: unknown, resource: boolean): unknown {
  if (Array.isArray(value))
    return schema.items ? value.map((item) => walk(schema.items!, item, false)) : value;
  if (typeof value !== "object" || value === null) return value;
  const object = value as Record<string, unknown>;
  const properties = schema.properties ?? {};
  const preserve = schema["x-kubernetes-preserve-unknown-fields"] === true;
  const embedded = resource || schema["x-kubernetes-embedded-resource"] === true;
  for (const key of Object.keys(object)) {
    const known = properties[key];
    // apiVersion, kind and metadata of a resource are the API server's to check, whatever the schema says.
    if (embedded && ROOT_FIELDS.includes(key)) continue;
    if (known) object[key] = walk(known, object[key], false);
    else if (typeof schema.additionalProperties === "object")
      object[key] = walk(schema.additionalProperties, object[key], false);
    else if (!preserve && schema.additionalProperties !== true) delete object[key];
  }
  for (const [key, sub] of Object.entries(properties))
    if (object[key] === undefined && sub.default !== undefined)
      object[key] = walk(sub, structuredClone(sub.default), false);
  return object;
}
