import { CustomObjectsApi } from "@kubernetes/client-node";
import { afterEach, describe, expect, it } from "vitest";
import { makeApiClient } from "../../../src/kubernetes/api/kubeClients.js";
import { ListWatch } from "../../../src/kubernetes/api/listWatch.js";
import { silentLogger } from "../../../src/log/logger.js";
import { idlePool } from "../../support/devnet.js";
import { startFakeApiServer, type KubeObject } from "../../support/fakeApiServer.js";
import { waitFor } from "../../support/waitFor.js";

const POOLS = "apis/lightfleet.io/v1alpha1/lightnodepools";
const cleanup: Array<() => unknown> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

const pool = (namespace: string, name: string) => idlePool(name, namespace) as unknown as KubeObject;

describe("ListWatch of a collection of every namespace", () => {
  it("keeps one name once per namespace, through the list, watch events and deletes", async () => {
    const api = await startFakeApiServer();
    cleanup.push(() => api.close());
    api.put(POOLS, pool("eth", "mainnet"));
    api.put(POOLS, pool("staging", "mainnet"));
    const custom = makeApiClient(api.kubeConfig(), CustomObjectsApi);
    const cache = new ListWatch<KubeObject>({
      kubeConfig: api.kubeConfig(),
      path: `/${POOLS}`,
      list: async () =>
        (await custom.listClusterCustomObject({
          group: "lightfleet.io",
          version: "v1alpha1",
          plural: "lightnodepools",
        })) as { items: KubeObject[] },
      what: "LightNodePool",
      logger: silentLogger(),
      onChange: () => {},
    });
    cache.start();
    cleanup.push(() => cache.stop());
    const held = () =>
      cache
        .list()
        .map((p) => `${p.metadata.namespace}/${p.metadata.name}`)
        .sort()
        .join(",");
    await waitFor(() => held() === "eth/mainnet,staging/mainnet" && api.watching(POOLS) === 1, {
      what: "both pools listed",
    });
    expect(cache.get("staging/mainnet")?.metadata.namespace).toBe("staging");

    api.put(POOLS, pool("dev", "mainnet"));
    await waitFor(() => held() === "dev/mainnet,eth/mainnet,staging/mainnet", {
      what: "the third pool watched",
    });
    api.remove(POOLS, "eth", "mainnet");
    await waitFor(() => held() === "dev/mainnet,staging/mainnet", { what: "only eth's pool gone" });
  });
});
