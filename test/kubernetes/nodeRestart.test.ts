import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { V1Pod } from "@kubernetes/client-node";
import { afterEach, describe, expect, it } from "vitest";
import { RESTART_ANNOTATION } from "../../src/kubernetes/api/crds.js";
import { memberOf, type PoolBinding } from "../../src/kubernetes/pods/podRules.js";
import { startFakeApiServer } from "../support/fakeApiServer.js";
import { runCli } from "../support/runCli.js";

const PODS = "api/v1/pods";
const pool: PoolBinding = {
  key: "mainnet",
  network: "mainnet",
  namespace: "eth",
  labelSelector: "app=light",
  rpcPort: 8545,
  workload: { kind: "StatefulSet", name: "light" },
};

function lightPod(name: string, options: { gate?: boolean; annotations?: Record<string, string> } = {}) {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace: "eth", labels: { app: "light" }, annotations: options.annotations ?? {} },
    spec: {
      containers: [{ name: "node", image: "light" }],
      ...(options.gate === false ? {} : { readinessGates: [{ conditionType: "lightfleet.io/in-sync" }] }),
    },
    status: { podIP: "10.0.0.7", startTime: "2026-11-22T10:00:00Z" },
  };
}

const cleanup: Array<() => unknown> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

describe("restarting a light node in Kubernetes", () => {
  it("takes the restart annotation on a pod as an operator's restart request", () => {
    expect(memberOf(lightPod("light-0") as unknown as V1Pod, pool)?.restartRequested).toBeUndefined();
    const annotated = lightPod("light-0", { annotations: { [RESTART_ANNOTATION]: "2026-11-24T13:00:00Z" } });
    expect(memberOf(annotated as unknown as V1Pod, pool)?.restartRequested).toBe(true);
  });

  it("lightfleet node restart --cluster annotates the pod, and names a pod that is missing or not a light node", async () => {
    const api = await startFakeApiServer();
    cleanup.push(() => api.close());
    const dir = mkdtempSync(join(tmpdir(), "lightfleet-node-restart-"));
    cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
    const env = { KUBECONFIG: api.writeKubeconfig(join(dir, "kubeconfig")) };
    api.put(PODS, lightPod("light-0"));
    api.put(PODS, lightPod("web-0", { gate: false }));

    const done = await runCli(["node", "restart", "light-0", "--cluster"], { env });
    expect(done.stderr).toBe("");
    expect(done.stdout).toContain("light-0: restart requested (pod eth/light-0 annotated");
    expect(done.code).toBe(0);
    const annotationsOf = (name: string) =>
      (api.get(PODS, "eth", name)?.metadata.annotations ?? {}) as Record<string, string>;
    const annotations = annotationsOf("light-0");
    expect(Date.parse(annotations[RESTART_ANNOTATION] ?? "")).toBeGreaterThan(Date.now() - 60_000);

    const missing = await runCli(["node", "restart", "light-9", "-n", "eth"], { env });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("no pod named light-9 in namespace eth");
    const other = await runCli(["node", "restart", "web-0", "--cluster"], { env });
    expect(other.code).toBe(2);
    expect(other.stderr).toContain("pod eth/web-0 is not a lightfleet light node");
    expect(annotationsOf("web-0")[RESTART_ANNOTATION]).toBeUndefined();
  });
});
