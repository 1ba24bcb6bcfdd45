import { Ajv } from "ajv";
import type { Schema } from "./schemaPruning.js";

const ajv = new Ajv({ strict: false, allErrors: true, validateFormats: false });

/**
 * A custom resource's check against its CRD's openAPIV3Schema (types, required fields, patterns, enums, bounds), as
 * the API server makes it after pruning and defaulting: the problems, each with its field, or none. metadata is the
 * server's own; CEL rules (x-kubernetes-validations) and formats are not checked.
 */
export function schemaValidator(schema: Schema): (object: unknown) => string[] {
  const properties = { ...(schema.properties ?? {}), metadata: { type: "object" } };
  const validate = ajv.compile({ ...schema, properties });
  return (object) => {
    if (validate(object)) return [];
    return (validate.errors ?? []).map((e) => {
      const field = e.instancePath
        .slice(1)
        .replace(/\/(\d+)(?=\/|$)/g, "[$1]")
        .replaceAll("/", ".");
      if (e.keyword !== "required") return `${field}: Invalid value: ${e.message}`;
      const missing = (e.params as { missingProperty: string }).missingProperty;
      return `${field ? `${field}.` : ""}${missing}: Required value`;
    });
  };
}
