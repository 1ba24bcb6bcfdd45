import { mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse, stringify } from "yaml";
import { NETWORK_PRESETS } from "../../src/config/presets.js";
import { CHART_DIR, renderChart } from "../support/helm.js";
import type { K8sObject } from "../support/helm.js";
import { runCli } from "../support/runCli.js";

function configFile(objects: K8sObject[]): string {
  const configMap = objects.find((o) => o.kind === "ConfigMap" && o.metadata.name === "lightfleet-config");
  const text = (configMap?.data as Record<string, string> | undefined)?.["lightfleet.yaml"];
  if (!text) throw new Error("no lightfleet-config ConfigMap with lightfleet.yaml");
  return text;
}

describe("the chart's lightfleet config", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "lf-chart-config-"));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("is accepted by `lightfleet config check` for every values file", async () => {
    const examples = (await readdir(join(CHART_DIR, "examples"))).map(
      (f) => `charts/lightfleet/examples/${f}`,
    );
    const cases: [string, string[], string][] = [
      ["default", [], "ok (networks: none)"],
      [
        "full",
        ["charts/lightfleet/ci/full-values.yaml"],
        "ok (networks: mainnet (chain 1), sepolia (chain 11155111))",
      ],
      ...examples.map((f): [string, string[], string] => [f.replace(/\W/g, "_"), [f], "ok (networks: "]),
    ];
    for (const [name, values, expected] of cases) {
      const file = join(dir, `${name}.yaml`);
      await writeFile(file, configFile((await renderChart({ values })).objects));
      const result = await runCli(["config", "check", file]);
      expect(result.stderr, name).toBe("");
      expect(result.code, name).toBe(0);
      expect(result.stdout, name).toContain(expected);
    }
  });

  it("carries the chart's ports, data dir and watch namespace, and merges `config` over them", async () => {
    const config = parse(
      configFile((await renderChart({ values: ["charts/lightfleet/ci/full-values.yaml"] })).objects),
    );
    expect(config).toMatchObject({
      dataDir: "/data",
      admin: { port: 9464 },
      gateway: { port: 8545, workers: "auto", maxBatchLength: 50 },
      keys: { port: 8080 },
      log: { level: "debug", format: "json" },
      controller: { namespace: "" },
    });
    // Chart-only keys (workload, pool, enode) stay out of the lightfleet config.
    expect(JSON.stringify(config.networks)).not.toMatch(/workload|enode|"pool"/);
    const namespaced = parse(configFile((await renderChart()).objects));
    expect(namespaced.controller.namespace).toBe("lightfleet");
    const workers = parse(configFile((await renderChart({ set: ["gateway.workers=4"] })).objects));
    expect(workers.gateway.workers).toBe(4);
  });

  it("runs the gateway with workers: auto and a CPU request and limit of gateway.cores; a count of workers sets the request", async () => {
    const gatewayResources = (objects: K8sObject[]) => {
      const deployment = objects.find((o) => o.kind === "Deployment" && o.metadata.name.endsWith("-gateway"));
      const spec = deployment?.spec as
        | {
            template: {
              spec: { containers: Array<{ resources?: Record<string, Record<string, unknown>> }> };
            };
          }
        | undefined;
      return spec?.template.spec.containers[0]?.resources;
    };
    const byDefault = (await renderChart()).objects;
    expect(parse(configFile(byDefault)).gateway.workers).toBe("auto");
    expect(gatewayResources(byDefault)).toMatchObject({ requests: { cpu: "1" }, limits: { cpu: "1" } });
    const threeCores = await renderChart({ set: ["gateway.cores=3"] });
    expect(gatewayResources(threeCores.objects)).toMatchObject({
      requests: { cpu: "3" },
      limits: { cpu: "3" },
    });
    const four = await renderChart({ set: ["gateway.workers=4"] });
    expect(gatewayResources(four.objects)?.requests).toMatchObject({ cpu: "4" });
    expect(gatewayResources(four.objects)?.limits).toBeUndefined();
    const byHand = await renderChart({ set: ["gateway.resources.requests.cpu=500m"] });
    expect(gatewayResources(byHand.objects)).toMatchObject({
      requests: { cpu: "500m" },
      limits: { cpu: "1" },
    });
  });

  it("values its schema cannot judge (a preset and a chain id that disagree) are refused by helm, by path, as by config check", async () => {
    const set = [
      "networks[0].name=mainnet",
      "networks[0].preset=mainnet",
      "networks[0].reservedPeers[0].name=full-0",
      "networks[0].reservedPeers[0].http=http://full-0:8545",
      "networks[0].pool.workload.kind=StatefulSet",
      "networks[0].pool.workload.name=n",
    ];
    // values.schema.json refuses malformed options (test/chart/schemas.test.ts); the cross-field rules are the
    // chart's template checks, so nothing is rendered.
    await expect(renderChart({ set: [...set, "networks[0].chainId=5"] })).rejects.toThrow(
      /networks\[mainnet\]\.chainId: is 5 but preset mainnet has chain id 1/,
    );
    // The same network written in a config file: config check says the same.
    const { objects } = await renderChart({ set });
    const file = join(dir, "bad.yaml");
    const config = parse(configFile(objects)) as { networks: Array<Record<string, unknown>> };
    config.networks[0]!.chainId = 5;
    await writeFile(file, stringify(config));
    const result = await runCli(["config", "check", file]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("networks[0].chainId");
  });

  it("refuses config.gateway.replicas, which only `lightfleet up` reads, and names the chart value that sets replicas", async () => {
    await expect(renderChart({ set: ["config.gateway.replicas=3"] })).rejects.toThrow(
      /config\.gateway\.replicas: is read by `lightfleet up` only.*set gateway\.replicas \(the Deployment's replicas, now 2\)/,
    );
    // Other gateway settings under config still merge.
    const { objects } = await renderChart({ set: ["config.gateway.maxBatchLength=7"] });
    expect(
      (parse(configFile(objects)) as { gateway: { maxBatchLength: number } }).gateway.maxBatchLength,
    ).toBe(7);
  });

  it("knows the same chain id for every preset as lightfleet does", async () => {
    for (const [preset, { chainId }] of Object.entries(NETWORK_PRESETS)) {
      if (preset === "ropsten") continue; // refused as deprecated by both
      const { objects } = await renderChart({
        set: [
          `networks[0].name=n`,
          `networks[0].preset=${preset}`,
          "networks[0].reservedPeers[0].name=p",
          "networks[0].reservedPeers[0].http=http://p:8545",
          "networks[0].workload.enabled=true",
          "networks[0].workload.image.repository=client",
        ],
      });
      const pool = objects.find((o) => o.kind === "LightNodePool");
      expect((pool?.spec as { chainId: number }).chainId, preset).toBe(chainId);
    }
  });
});
