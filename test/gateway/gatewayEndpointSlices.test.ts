import type { ChildProcessWithoutNullStreams } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AnvilNode } from "../../src/devnet/anvil.js";
import { startAnvil } from "../../src/devnet/anvil.js";
import { freePort } from "../../src/process/freePort.js";
import { HttpRpcClient } from "../../src/rpc/httpRpcClient.js";
import { startFakeApiServer, type FakeApiServer } from "../support/fakeApiServer.js";
import { spawnGateway } from "../support/runCli.js";
import { waitFor } from "../support/waitFor.js";
import { post, writeGatewayConfig } from "./support.js";

const SLICES = "apis/discovery.k8s.io/v1/endpointslices";
const GENESIS = 1_790_000_000;

/** The Service's one EndpointSlice: light-0 on 127.0.0.2 and light-1 on 127.0.0.3, each ready or not. */
function slice(port: number, ready: [boolean, boolean]) {
  return {
    apiVersion: "discovery.k8s.io/v1",
    kind: "EndpointSlice",
    metadata: {
      name: "light-devnet-x1",
      namespace: "eth",
      labels: { "kubernetes.io/service-name": "light-devnet" },
    },
    addressType: "IPv4",
    ports: [{ name: "http", port, protocol: "TCP" }],
    endpoints: ready.map((r, i) => ({
      addresses: [`127.0.0.${i + 2}`],
      conditions: { ready: r },
      targetRef: { kind: "Pod", name: `light-${i}`, namespace: "eth" },
    })),
  };
}

describe("lightfleet gateway in a cluster: upstreams from the pool Service's EndpointSlices", () => {
  const nodes: AnvilNode[] = [];
  const children: ChildProcessWithoutNullStreams[] = [];
  let api: FakeApiServer;
  let dir: string;
  let port: number;

  beforeAll(async () => {
    port = await freePort();
    for (let i = 0; i < 2; i++) {
      // One genesis and the same three blocks on both: they agree on every hash, however far apart they start (the
      // gateway gives no calls to a node whose head the peer does not have).
      const node = await startAnvil({
        name: `light-${i}`,
        chainId: 31_337,
        noMining: true,
        timestamp: GENESIS,
        host: `127.0.0.${i + 2}`,
        port,
      });
      const rpc = new HttpRpcClient(node.httpUrl, 10_000);
      await rpc.call("anvil_setBlockTimestampInterval", [0]);
      await rpc.call("evm_mine", [{ timestamp: GENESIS + 12, blocks: 3 }]);
      nodes.push(node);
    }
    api = await startFakeApiServer();
    dir = mkdtempSync(join(tmpdir(), "lightfleet-gateway-slices-"));
  });

  afterAll(async () => {
    for (const child of children) if (child.exitCode === null) child.kill("SIGKILL");
    await Promise.all(nodes.map((n) => n.stop()));
    await api?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("balances over the ready pods only, and follows the slices as pods turn unready and ready", async () => {
    api.put(SLICES, slice(port, [true, true]));
    const kubeconfig = api.writeKubeconfig(join(dir, "kubeconfig"));
    const config = writeGatewayConfig(join(dir, "gateway.yaml"), {
      peer: nodes[0]!.httpUrl,
      network: { service: { name: "light-devnet", namespace: "eth" } },
    });
    const serving = await spawnGateway(config, { KUBECONFIG: kubeconfig });
    const child = serving.child;
    children.push(child);

    const balance = {
      jsonrpc: "2.0",
      id: 1,
      method: "eth_getBalance",
      params: ["0x" + "00".repeat(20), "latest"],
    };
    const call = async () => ((await post(`${serving.url}/`, balance)).body as { result?: string }).result;
    const served = async (pod: string) => {
      const text = await (await fetch(`${serving.admin}/metrics`)).text();
      const line = text
        .split("\n")
        .find((l) =>
          l.startsWith(
            `lightfleet_gateway_upstream_requests_total{network="devnet",upstream="${pod}",outcome="ok"}`,
          ),
        );
      return Number(line?.split(" ").at(-1) ?? 0);
    };
    const batch = async () => {
      for (let i = 0; i < 20; i++) expect(await call()).toBe("0x0");
    };

    // Both pods take traffic, once the gateway has each one's head (a call for `latest` goes to a node known to have
    // the block, so a pod whose first head is still on its way gets none).
    await waitFor(async () => (await call()) === "0x0", { what: "a first answer through the gateway" });
    await waitFor(
      async () => {
        await batch();
        return (await served("light-0")) > 0 && (await served("light-1")) > 0;
      },
      { what: "both ready pods answering calls" },
    );

    // light-0 turns unready (the controller unrouted it): it gets nothing more.
    api.put(SLICES, slice(port, [false, true]));
    await waitFor(
      async () => {
        const before = await served("light-0");
        await batch();
        return (await served("light-0")) === before;
      },
      { what: "light-0 out of rotation" },
    );
    const light0 = await served("light-0");
    await batch();
    expect(await served("light-0")).toBe(light0);

    // Ready again: back in rotation.
    api.put(SLICES, slice(port, [true, true]));
    await waitFor(
      async () => {
        await batch();
        return (await served("light-0")) > light0;
      },
      { what: "light-0 back in rotation" },
    );
    const watchCall = api.calls.find((c) => c.query.watch === "true")!;
    expect(watchCall.path).toBe("/apis/discovery.k8s.io/v1/namespaces/eth/endpointslices");
    expect(watchCall.query.labelSelector).toBe("kubernetes.io/service-name=light-devnet");

    const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
    child.kill("SIGTERM");
    expect(await exited).toBe(0);
  });
});
