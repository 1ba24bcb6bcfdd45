import { describe, expect, it } from "vitest";
import { renderChart } from "../support/helm.js";
import type { K8sObject } from "../support/helm.js";

interface EnvVar {
  name: string;
  valueFrom?: { secretKeyRef?: { name: string; key: string } };
}
const keysEnv = (objects: K8sObject[]): EnvVar[] => {
  const deployment = objects.find((o) => o.kind === "Deployment" && o.metadata.name === "lightfleet-keys")!;
  const spec = deployment.spec as { template: { spec: { containers: Array<{ env?: EnvVar[] }> } } };
  return spec.template.spec.containers[0]!.env ?? [];
};

/** The key API's pepper and seed key come from one Secret shared by every replica and every restart. */
describe("chart: the key API's secrets", () => {
  it("makes a Secret kept across upgrades and uninstalls, and gives both secrets to every replica from it", async () => {
    const { objects } = await renderChart({
      set: ["keys.replicas=2", "keys.database.existingSecret=keys-db"],
    });
    const secret = objects.find((o) => o.kind === "Secret" && o.metadata.name === "lightfleet-keys-secrets");
    expect(secret).toBeDefined();
    expect(secret!.metadata.annotations).toMatchObject({ "helm.sh/resource-policy": "keep" });
    const data = (secret as unknown as { data: Record<string, string> }).data;
    for (const key of ["LIGHTFLEET_KEYS_PEPPER", "LIGHTFLEET_KEYS_SEED_KEY"])
      expect(Buffer.from(data[key]!, "base64").toString().length).toBeGreaterThanOrEqual(32);
    const env = keysEnv(objects);
    for (const key of ["LIGHTFLEET_KEYS_PEPPER", "LIGHTFLEET_KEYS_SEED_KEY"])
      expect(env.find((e) => e.name === key)?.valueFrom).toEqual({
        secretKeyRef: { name: "lightfleet-keys-secrets", key, optional: true },
      });
  });

  it("takes them from keys.secrets.existingSecret instead, and then makes none", async () => {
    const { objects } = await renderChart({ set: ["keys.secrets.existingSecret=my-keys"] });
    expect(objects.some((o) => o.kind === "Secret" && o.metadata.name === "lightfleet-keys-secrets")).toBe(
      false,
    );
    expect(keysEnv(objects).find((e) => e.name === "LIGHTFLEET_KEYS_SEED_KEY")?.valueFrom).toEqual({
      secretKeyRef: { name: "my-keys", key: "LIGHTFLEET_KEYS_SEED_KEY", optional: true },
    });
  });
});
