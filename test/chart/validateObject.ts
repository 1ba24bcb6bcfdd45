import { readFile, readdir } from "node:fs/promises";
import { join } from "node:path";
import { Ajv } from "ajv";
import type { ValidateFunction } from "ajv";
import { kedaSh } from "@kubernetes-models/keda";
import { monitoringCoreosCom } from "@kubernetes-models/prometheus-operator";
import * as kubernetes from "kubernetes-models";
import { parseAllDocuments } from "yaml";
import type { K8sObject } from "../support/helm.js";
import { CHART_DIR } from "../support/helm.js";

interface Model {
  new (data: unknown): { validate(): void };
}
type ModelTree = Record<string, Record<string, Record<string, unknown>>>;

/** "rbac.authorization.k8s.io" -> "rbacAuthorizationK8sIo", the key kubernetes-models exports a group under. */
function groupKey(group: string): string {
  return group.replace(/\.(\w)/g, (_, c: string) => c.toUpperCase());
}

const TREES: ModelTree[] = [
  kubernetes as unknown as ModelTree,
  { monitoringCoreosCom } as unknown as ModelTree,
  { kedaSh } as unknown as ModelTree,
];

/** The kubernetes-models class for an apiVersion and kind (built-in kinds, Prometheus Operator, KEDA). */
function modelFor(apiVersion: string, kind: string): Model | undefined {
  const [group, version] = apiVersion.includes("/") ? apiVersion.split("/") : ["", apiVersion];
  for (const tree of TREES) {
    const versions = group === "" ? { [version!]: tree[version!] } : tree[groupKey(group!)];
    const model = versions?.[version!]?.[kind];
    if (typeof model === "function") return model as Model;
  }
  return undefined;
}

export interface CustomResourceDefinition {
  spec: {
    group: string;
    names: { kind: string; plural: string };
    versions: { name: string; schema?: { openAPIV3Schema?: Record<string, unknown> } }[];
  };
}

/** The CRDs the chart installs from crds/. */
export async function loadCrds(): Promise<CustomResourceDefinition[]> {
  const dir = join(CHART_DIR, "crds");
  // A chart without crds/ has no CRDs: the tests that need them then fail by name, not on ENOENT.
  const files = (await readdir(dir).catch(() => [] as string[])).filter((f) => /\.ya?ml$/.test(f));
  const crds: CustomResourceDefinition[] = [];
  for (const file of files) {
    for (const doc of parseAllDocuments(await readFile(join(dir, file), "utf8"))) {
      const crd = doc.toJS() as (CustomResourceDefinition & { kind?: string }) | null;
      if (crd?.kind === "CustomResourceDefinition") crds.push(crd);
    }
  }
  return crds;
}

const ajv = new Ajv({ strict: false, allErrors: true, validateFormats: false });

/**
 * A CRD schema (OpenAPI 3.0: `exclusiveMinimum: true` beside `minimum`) in the JSON Schema dialect ajv reads
 * (`exclusiveMinimum: <bound>`).
 */
export function openApiToJsonSchema(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(openApiToJsonSchema);
  if (!schema || typeof schema !== "object") return schema;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key === "exclusiveMinimum" || key === "exclusiveMaximum") continue;
    out[key] = key === "enum" || key === "required" ? value : openApiToJsonSchema(value);
  }
  const source = schema as Record<string, unknown>;
  // As the API server reads it: a whole number or a string (a fraction such as 0.5 is refused).
  if (source["x-kubernetes-int-or-string"] === true && source.type === undefined)
    out.type = ["integer", "string"];
  for (const [exclusive, bound] of [
    ["exclusiveMinimum", "minimum"],
    ["exclusiveMaximum", "maximum"],
  ] as const) {
    if (source[exclusive] === true) {
      out[exclusive] = source[bound];
      delete out[bound];
    }
  }
  return out;
}

/** A validator for custom resources of the chart's own CRDs, from each version's openAPIV3Schema. */
export function crdValidators(crds: CustomResourceDefinition[]): Map<string, ValidateFunction> {
  const validators = new Map<string, ValidateFunction>();
  for (const crd of crds) {
    for (const version of crd.spec.versions) {
      const schema = version.schema?.openAPIV3Schema;
      if (!schema) continue;
      // metadata is validated by the API server itself, not by the CRD schema.
      const properties = { ...(schema.properties as Record<string, unknown>), metadata: { type: "object" } };
      validators.set(
        `${crd.spec.group}/${version.name}/${crd.spec.names.kind}`,
        ajv.compile(openApiToJsonSchema({ ...schema, properties }) as object),
      );
    }
  }
  return validators;
}

/**
 * Validates one rendered object against its kind's schema: the Kubernetes OpenAPI schemas (kubernetes-models and its
 * Prometheus Operator and KEDA packages) or the chart's own CRDs. An object of an unknown kind is an error.
 */
export function validateObject(object: K8sObject, crds: Map<string, ValidateFunction>): string[] {
  const where = `${object.kind}/${object.metadata?.name}`;
  const crd = crds.get(`${object.apiVersion}/${object.kind}`);
  if (crd) {
    if (crd(object)) return [];
    return (crd.errors ?? []).map((e) => `${where}: ${e.instancePath} ${e.message}`);
  }
  const model = modelFor(object.apiVersion, object.kind);
  if (!model) return [`${where}: no schema known for ${object.apiVersion} ${object.kind}`];
  try {
    new model(object).validate();
    return [];
  } catch (error) {
    return [`${where}: ${(error as Error).message}`];
  }
}
