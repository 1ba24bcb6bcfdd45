import { describe, expect, it } from "vitest";
import { parseConfigText } from "../../src/config/loadConfig.js";
import type { LightNodePool } from "../../src/kubernetes/api/crds.js";
import { poolNetwork } from "../../src/kubernetes/controller/poolNetworks.js";
import { renderChart } from "../support/helm.js";
import type { K8sObject } from "../support/helm.js";

const PRODUCTION = "charts/lightfleet/examples/production-values.yaml";

function configText(objects: K8sObject[]): string {
  const configMap = objects.find((o) => o.kind === "ConfigMap" && o.metadata.name === "lightfleet-config");
  return (configMap!.data as Record<string, string>)["lightfleet.yaml"]!;
}

describe("a LightNodePool the chart writes", () => {
  it("reaches the controller's engine whole: the health and scaling the config file gives, and the pods' ports", async () => {
    const { objects } = await renderChart({ values: [PRODUCTION] });
    const fromFile = new Map(parseConfigText(configText(objects)).networks.map((n) => [n.name, n]));
    const pools = objects.filter((o) => o.kind === "LightNodePool") as unknown as LightNodePool[];
    expect(pools.map((p) => p.metadata.name)).toEqual(["mainnet", "sepolia"]);
    for (const pool of pools) {
      const { network } = poolNetwork(pool);
      const file = fromFile.get(pool.spec.network)!;
      // What the controller runs is what the config file (and `lightfleet up`) would run.
      expect(network.health, pool.metadata.name).toEqual(file.health);
      expect(network.scaling, pool.metadata.name).toEqual(file.scaling);
    }
    const [mainnet, sepolia] = pools.map(poolNetwork);
    expect(mainnet!.network.health).toMatchObject({
      syncingIsUnhealthy: false,
      maxLagBlocks: 2,
      restartAfter: 180_000,
      probeInterval: 3_000,
    });
    expect(mainnet!.network.scaling).toMatchObject({ minReplicas: 3, targetRequestsPerNode: 40 });
    expect(mainnet!.network.scaling.cronFloors).toHaveLength(1);
    // The light nodes listen on 8547 (HTTP) and 8548 (WebSocket): probes must go there, not to 8545.
    expect(mainnet!.binding).toMatchObject({ rpcPort: 8547, wsPort: 8548 });
    expect(sepolia!.network.health.maxLagSeconds).toBe(30_000);
    expect(sepolia!.binding.rpcPort).toBe(8545);
    expect(sepolia!.binding.wsPort).toBeUndefined();
  });

  it("carries a custom chain's block time, durations in seconds, and one port for HTTP and WebSocket", async () => {
    const { objects } = await renderChart({
      set: [
        "networks[0].name=gnosis",
        "networks[0].chainId=100",
        "networks[0].blockTime=5s",
        "networks[0].reservedPeers[0].name=full-0",
        "networks[0].reservedPeers[0].http=http://full-0:8545",
        "networks[0].health.restartAfter=90",
        "networks[0].health.peerHaltAfter=1m",
        "networks[0].workload.enabled=true",
        "networks[0].workload.image.repository=client",
        "networks[0].workload.ports.http=9000",
        "networks[0].workload.ports.ws=9000",
        "autoscaling.targetRequestsPerNode=30",
      ],
    });
    const file = parseConfigText(configText(objects)).networks[0]!;
    const pool = objects.find((o) => o.kind === "LightNodePool") as unknown as LightNodePool;
    const { network, binding } = poolNetwork(pool);
    expect(network.blockTimeMs).toBe(5_000);
    expect(network.health).toEqual(file.health);
    // The chart-wide target per node reaches the pool and the config file alike.
    expect(network.scaling).toEqual(file.scaling);
    expect(network.scaling.targetRequestsPerNode).toBe(30);
    expect(network.health).toMatchObject({
      restartAfter: 90_000,
      peerHaltAfter: 60_000,
      maxLagSeconds: 15_000,
    });
    expect(binding.rpcPort).toBe(9000);
    expect(binding.wsPort).toBeUndefined();
  });
});
