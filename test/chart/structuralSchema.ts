/**
 * Checks a CRD version's openAPIV3Schema against the rules for structural schemas
 * (Kubernetes docs, "Specifying a structural schema"): the API server refuses or prunes otherwise.
 */
type Schema = Record<string, unknown>;

const COMBINATORS = ["allOf", "anyOf", "oneOf", "not"] as const;
/** Keywords a value validation under allOf/anyOf/oneOf/not must not carry. */
const FORBIDDEN_IN_VALUE_VALIDATION = [
  "type",
  "default",
  "description",
  "nullable",
  "additionalProperties",
  "x-kubernetes-preserve-unknown-fields",
  "x-kubernetes-int-or-string",
  "x-kubernetes-embedded-resource",
];

export function structuralProblems(root: Schema): string[] {
  const problems: string[] = [];

  function checkValueValidation(schema: Schema, path: string, structural: Schema | undefined): void {
    for (const keyword of FORBIDDEN_IN_VALUE_VALIDATION) {
      if (keyword in schema) problems.push(`${path}: ${keyword} is not allowed inside a value validation`);
    }
    const properties = (schema.properties ?? {}) as Record<string, Schema>;
    const known = (structural?.properties ?? {}) as Record<string, Schema>;
    for (const [name, sub] of Object.entries(properties)) {
      if (!(name in known))
        problems.push(`${path}.properties.${name}: not specified outside the value validation`);
      checkValueValidation(sub, `${path}.properties.${name}`, known[name]);
    }
    for (const c of COMBINATORS)
      for (const sub of asList(schema[c])) checkValueValidation(sub, `${path}.${c}`, structural);
  }

  function walk(schema: Schema, path: string, isRoot: boolean): void {
    const anyType =
      schema["x-kubernetes-int-or-string"] === true ||
      schema["x-kubernetes-preserve-unknown-fields"] === true;
    if (typeof schema.type !== "string" || schema.type === "") {
      if (!anyType) problems.push(`${path}: no type`);
    }
    if (
      schema.properties &&
      schema.additionalProperties !== undefined &&
      schema.additionalProperties !== false
    ) {
      problems.push(`${path}: properties and additionalProperties together`);
    }
    if (Array.isArray(schema.items)) problems.push(`${path}: items must be one schema, not a list`);
    if (schema.type === "array" && !schema.items) problems.push(`${path}: array without items`);
    for (const c of COMBINATORS)
      for (const sub of asList(schema[c])) checkValueValidation(sub, `${path}.${c}`, schema);
    const properties = (schema.properties ?? {}) as Record<string, Schema>;
    for (const [name, sub] of Object.entries(properties)) {
      if (isRoot && name === "metadata") {
        const extra = Object.keys((sub.properties ?? {}) as object).filter(
          (k) => k !== "name" && k !== "generateName",
        );
        if (extra.length > 0) problems.push(`${path}.metadata: only name and generateName may be restricted`);
      }
      walk(sub, `${path}.properties.${name}`, false);
    }
    if (schema.items && !Array.isArray(schema.items)) walk(schema.items as Schema, `${path}.items`, false);
    if (typeof schema.additionalProperties === "object") {
      walk(schema.additionalProperties as Schema, `${path}.additionalProperties`, false);
    }
  }

  walk(root, "openAPIV3Schema", true);
  return problems;
}

function asList(value: unknown): Schema[] {
  if (value === undefined) return [];
  return (Array.isArray(value) ? value : [value]) as Schema[];
}
