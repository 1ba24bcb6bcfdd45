import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parseObjects } from "../support/helm.js";
import { MANIFESTS_DIR, renderManifests } from "../support/manifests.js";
import { crdValidators, loadCrds, validateObject } from "./validateObject.js";

describe("manifests/", () => {
  it("is the chart rendered with default values (regenerate with `npm run manifests`)", async () => {
    const expected = await renderManifests();
    expect(expected.size).toBe(3);
    for (const [path, content] of expected) {
      const actual = await readFile(join(MANIFESTS_DIR, path), "utf8").catch(() => "(missing)");
      expect(actual, `manifests/${path} is out of date: run npm run manifests`).toBe(content);
    }
  });

  it("holds a namespace, the CRDs and the components, every object valid for its kind", async () => {
    const objects = parseObjects(await readFile(join(MANIFESTS_DIR, "lightfleet.yaml"), "utf8"));
    const kinds = objects.map((o) => o.kind);
    expect(kinds[0]).toBe("Namespace");
    expect(kinds.filter((k) => k === "CustomResourceDefinition")).toHaveLength(2);
    // The controller, the gateway, the key API, and the small Redis the gateway replicas share.
    expect(kinds.filter((k) => k === "Deployment")).toHaveLength(4);
    expect(kinds).not.toContain("Pod"); // helm test hooks stay out
    const validators = crdValidators(await loadCrds());
    expect(objects.flatMap((o) => validateObject(o, validators))).toEqual([]);
  });
});
