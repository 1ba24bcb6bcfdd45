import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { run } from "@bufbuild/cel";
import { describe, expect, it } from "vitest";
import { lightNodeStatus } from "../../src/kubernetes/status/statusObjects.js";
import { CHART_DIR } from "../support/helm.js";
import { crdValidators, loadCrds, validateObject } from "./validateObject.js";

type Schema = {
  properties?: Record<string, Schema>;
  items?: Schema;
  "x-kubernetes-validations"?: { rule: string; message: string }[];
};
type Crd = Awaited<ReturnType<typeof loadCrds>>[number] & {
  spec: {
    versions: { additionalPrinterColumns?: { name: string; priority?: number; jsonPath: string }[] }[];
  };
};

async function crd(kind: string): Promise<Crd> {
  const found = (await loadCrds()).find((c) => c.spec.names.kind === kind);
  if (!found) throw new Error(`no CRD for ${kind}`);
  return found as Crd;
}

/** The schema at a path of property names below openAPIV3Schema. */
function schemaAt(root: Crd, path: string[]): Schema {
  let schema = root.spec.versions[0]!.schema!.openAPIV3Schema as Schema;
  for (const name of path) schema = schema.properties![name]!;
  return schema;
}

/** A value as the API server hands it to CEL: objects are maps, integers ints. */
function celValue(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(celValue);
  if (value && typeof value === "object")
    return new Map(Object.entries(value).map(([k, v]) => [k, celValue(v)]));
  return Number.isInteger(value) ? BigInt(value as number) : value;
}

/**
 * The messages of the rules at PATH that refuse SELF (OLD: the stored value, for transition rules; rules using
 * oldSelf are skipped on create, as the API server does).
 */
function refusals(root: Crd, path: string[], self: unknown, old?: unknown): string[] {
  return (schemaAt(root, path)["x-kubernetes-validations"] ?? [])
    .filter(({ rule }) => old !== undefined || !rule.includes("oldSelf"))
    .filter(({ rule }) => {
      const result = run(rule, { self: celValue(self), oldSelf: celValue(old) } as never);
      if (typeof result !== "boolean") throw new Error(`rule ${rule} gave ${String(result)}`);
      return !result;
    })
    .map(({ message }) => message);
}

describe("the LightNodePool CRD's validation rules (evaluated with a CEL interpreter)", () => {
  it("refuse a selector that selects every pod of the namespace", async () => {
    const pools = await crd("LightNodePool");
    const selector = ["spec", "selector"];
    expect(refusals(pools, ["spec", "selector"], {})).toEqual([expect.stringContaining("every pod")]);
    expect(refusals(pools, selector, { matchLabels: {} })).not.toEqual([]);
    expect(refusals(pools, selector, { matchLabels: {}, matchExpressions: [] })).not.toEqual([]);
    expect(refusals(pools, selector, { matchLabels: { app: "geth" } })).toEqual([]);
    expect(refusals(pools, selector, { matchExpressions: [{ key: "app", operator: "Exists" }] })).toEqual([]);
  });

  it("refuse a change of spec.network (a pool's metrics, nodes and routes are the network's)", async () => {
    const pools = await crd("LightNodePool");
    expect(refusals(pools, ["spec", "network"], "sepolia", "mainnet")).toEqual([
      expect.stringContaining("cannot be changed"),
    ]);
    expect(refusals(pools, ["spec", "network"], "mainnet", "mainnet")).toEqual([]);
    expect(refusals(pools, ["spec", "network"], "mainnet")).toEqual([]);
  });

  it("check scaling bounds and the rate source's fields", async () => {
    const pools = await crd("LightNodePool");
    const scaling = ["spec", "scaling"];
    expect(refusals(pools, scaling, { minReplicas: 5, maxReplicas: 2 })).not.toEqual([]);
    expect(refusals(pools, scaling, { minReplicas: 2, maxReplicas: 5 })).toEqual([]);
    const source = [...scaling, "source"];
    expect(refusals(pools, source, { type: "prometheus" })).not.toEqual([]);
    expect(refusals(pools, source, { type: "gateway", url: "http://p:9090" })).not.toEqual([]);
    expect(refusals(pools, source, { type: "prometheus", url: "http://p:9090" })).toEqual([]);
    expect(refusals(pools, source, { type: "gateway" })).toEqual([]);
    // Open bounds of numbers (the config's positive() and lt(1)) are rules too.
    const target = [...scaling, "targetRequestsPerNode"];
    expect(refusals(pools, target, 0.0)).toEqual(["must be greater than 0"]);
    expect(refusals(pools, target, 0.5)).toEqual([]);
    expect(refusals(pools, [...scaling, "tolerance"], 1.0)).toEqual(["must be less than 1"]);
    expect(refusals(pools, [...scaling, "tolerance"], 0.1)).toEqual([]);
  });

  it("show Ready by default and let kubectl wait on a LightNode's Ready condition", async () => {
    const pools = await crd("LightNodePool");
    const ready = pools.spec.versions[0]!.additionalPrinterColumns!.find((c) => c.name === "Ready");
    expect(ready?.priority ?? 0).toBe(0);
    const nodes = await crd("LightNode");
    const columns = nodes.spec.versions[0]!.additionalPrinterColumns!;
    expect(columns.find((c) => c.name === "Ready")?.jsonPath).toBe(
      '.status.conditions[?(@.type=="Ready")].status',
    );
    // The status the controller writes carries the condition, valid for the CRD.
    const node = { name: "light-0", state: "Lagging", routed: false, message: "3 blocks behind", since: 0 };
    const status = lightNodeStatus("mainnet", node as never, [], 1_000);
    expect(status.conditions).toEqual([
      expect.objectContaining({
        type: "Ready",
        status: "False",
        reason: "Lagging",
        message: "3 blocks behind",
      }),
    ]);
    const healthy = lightNodeStatus(
      "mainnet",
      { ...node, state: "Healthy", routed: true } as never,
      [],
      1_000,
    );
    expect(healthy.conditions?.[0]).toMatchObject({ type: "Ready", status: "True", reason: "Healthy" });
    const object = {
      apiVersion: "lightfleet.io/v1alpha1",
      kind: "LightNode",
      metadata: { name: "light-0" },
      spec: { pool: "mainnet", podName: "light-0" },
      status,
    };
    expect(validateObject(object, crdValidators(await loadCrds()))).toEqual([]);
    expect(await readFile(join(CHART_DIR, "crds/lightnodes.lightfleet.io.yaml"), "utf8")).toContain(
      "conditions:",
    );
  });
});
