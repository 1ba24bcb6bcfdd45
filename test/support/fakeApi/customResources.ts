import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { parseAllDocuments } from "yaml";
import { ROOT } from "../runCli.js";
import type { Schema } from "./schemaPruning.js";

/** A custom resource kind the simulated API server serves, as its CRD declares it. */
export interface CustomResourceKind {
  group: string;
  version: string;
  plural: string;
  kind?: string;
  statusSubresource: boolean;
  schema: Schema;
}

interface CrdDocument {
  kind?: string;
  spec: {
    group: string;
    names: { kind: string; plural: string };
    versions: Array<{
      name: string;
      served?: boolean;
      subresources?: { status?: object };
      schema?: { openAPIV3Schema?: Schema };
    }>;
  };
}

/** The custom resources of the chart's CRDs (charts/lightfleet/crds), every served version. */
export function chartCustomResources(dir = join(ROOT, "charts/lightfleet/crds")): CustomResourceKind[] {
  const kinds: CustomResourceKind[] = [];
  for (const file of readdirSync(dir).filter((f) => /\.ya?ml$/.test(f))) {
    for (const doc of parseAllDocuments(readFileSync(join(dir, file), "utf8"))) {
      const crd = doc.toJS() as CrdDocument | null;
      if (crd?.kind !== "CustomResourceDefinition") continue;
      for (const version of crd.spec.versions) {
        if (version.served === false) continue;
        kinds.push({
          group: crd.spec.group,
          version: version.name,
          plural: crd.spec.names.plural,
          kind: crd.spec.names.kind,
          statusSubresource: version.subresources?.status !== undefined,
          schema: version.schema?.openAPIV3Schema ?? {
            type: "object",
            "x-kubernetes-preserve-unknown-fields": true,
          },
        });
      }
    }
  }
  return kinds;
}

/** A collection's name in the simulated API server: `apis/GROUP/VERSION/PLURAL`. */
export const customCollection = (kind: CustomResourceKind) =>
  `apis/${kind.group}/${kind.version}/${kind.plural}`;
