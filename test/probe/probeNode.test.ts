import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AnvilNode } from "../../src/devnet/anvil.js";
import { startAnvil } from "../../src/devnet/anvil.js";
import { createRegistry } from "../../src/metrics/registry.js";
import { createProbeMetrics } from "../../src/metrics/probeMetrics.js";
import { probeNode } from "../../src/probe/probeNode.js";
import { HttpRpcClient } from "../../src/rpc/httpRpcClient.js";

let node: AnvilNode;
let client: HttpRpcClient;

beforeAll(async () => {
  node = await startAnvil({ name: "probe-node", chainId: 31_337, noMining: true });
  client = new HttpRpcClient(node.httpUrl, 5_000);
  for (let i = 0; i < 5; i++) await client.call("evm_mine");
});
afterAll(() => node?.stop());

describe("probeNode", () => {
  it("reports head, chain id, sync status and the hash at the check height in one round trip", async () => {
    const expected = (await client.call<{ hash: string }>("eth_getBlockByNumber", ["0x3", false])).hash;
    const probe = await probeNode(client, { network: "n", timeoutMs: 2_000, checkHeight: 3 });
    expect(probe).toMatchObject({ reachable: true, chainId: 31_337, syncing: false, head: { number: 5 } });
    expect(probe.check).toEqual({ number: 3, hash: expected });
  });

  it("reports a null hash for a check height the node does not have yet", async () => {
    const probe = await probeNode(client, { network: "n", timeoutMs: 2_000, checkHeight: 1_000 });
    expect(probe.check).toEqual({ number: 1_000, hash: null });
  });

  it("reports an unreachable node with the reason, and counts it", async () => {
    const registry = createRegistry({ defaultMetrics: false });
    const metrics = createProbeMetrics(registry);
    const probe = await probeNode(new HttpRpcClient("http://127.0.0.1:1", 500), {
      network: "n",
      timeoutMs: 500,
      metrics,
    });
    expect(probe.reachable).toBe(false);
    expect(probe.error).toMatch(/cannot reach http:\/\/127\.0\.0\.1:1/);
    const text = await registry.metrics();
    expect(text).toContain('lightfleet_probe_errors_total{network="n",target="node",reason="connection"} 1');
    expect(text).toContain('lightfleet_probe_duration_seconds_count{network="n",target="node"} 1');
  });
});
