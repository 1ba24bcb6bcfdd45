import type { Registry } from "prom-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Devnet } from "../../src/devnet/devnet.js";
import { DEV_ACCOUNT } from "../../src/devnet/devTransactions.js";
import type { Gateway } from "../../src/gateway/gateway.js";
import type { StaticUpstreamSource } from "../../src/gateway/upstreams/staticSource.js";
import { startTestDevnet } from "../support/devnet.js";
import { waitFor } from "../support/waitFor.js";
import { CHAIN_ID, NETWORK, post, startTestGateway, waitForServedHead } from "./support.js";
import type { Json } from "./support.js";

const LIGHT_0 = `${NETWORK}-light-0`;
const LIGHT_1 = `${NETWORK}-light-1`;

/** Sum of a metric's series whose labels include `labels`. */
async function metric(registry: Registry, name: string, labels: Record<string, string>): Promise<number> {
  const values = (await registry.getSingleMetric(name)?.get())?.values ?? [];
  return values
    .filter((v) => Object.entries(labels).every(([k, want]) => v.labels[k] === want))
    .reduce((sum, v) => sum + v.value, 0);
}

describe("routing to real nodes: routed only, panic mode, reads surviving a dead node", () => {
  let devnet: Devnet;
  let gateway: Gateway;
  let source: StaticUpstreamSource;
  let registry: Registry;

  const reads = (count: number) =>
    post(
      gateway.url,
      Array.from({ length: count }, (_, id) => ({
        jsonrpc: "2.0",
        id,
        method: "eth_getBalance",
        params: [DEV_ACCOUNT, "latest"],
      })),
    );
  const allAnswered = (answer: { body: Json }) =>
    (answer.body as Json[]).every((r) => typeof r.result === "string" && BigInt(r.result) > 0n);

  beforeAll(async () => {
    devnet = await startTestDevnet({
      networks: [{ name: NETWORK, chainId: CHAIN_ID, fullNodes: 1, lightNodes: 2 }],
    });
    await devnet.mine(NETWORK);
    ({ gateway, source, registry } = await startTestGateway(devnet));
    await waitForServedHead(gateway, devnet);
  });

  afterAll(async () => {
    await gateway?.stop();
  });

  it("answers eth_chainId from the network's own id, asking no node", async () => {
    const sent = () => metric(registry, "lightfleet_gateway_upstream_requests_total", {});
    const before = await sent();
    const chainId = { jsonrpc: "2.0", method: "eth_chainId", params: [] };
    const answers = (
      await post(gateway.url, [
        { ...chainId, id: 1 },
        { ...chainId, id: "two" },
      ])
    ).body as Json[];
    expect(answers).toEqual([
      { jsonrpc: "2.0", id: 1, result: "0x7a69" },
      { jsonrpc: "2.0", id: "two", result: "0x7a69" },
    ]);
    expect(await sent()).toBe(before);
  });

  it("sends nothing to a node taken out of routing while another is routed", async () => {
    source.setRouted(NETWORK, LIGHT_0, false);
    const before = await metric(registry, "lightfleet_gateway_upstream_requests_total", {
      upstream: LIGHT_0,
    });
    expect(allAnswered(await reads(20))).toBe(true);
    expect(await metric(registry, "lightfleet_gateway_upstream_requests_total", { upstream: LIGHT_0 })).toBe(
      before,
    );
    expect(
      await metric(registry, "lightfleet_gateway_upstream_requests_total", {
        upstream: LIGHT_1,
        outcome: "ok",
      }),
    ).toBeGreaterThanOrEqual(20);
    source.setRouted(NETWORK, LIGHT_0, true);
  });

  it("serves from unrouted nodes in panic mode when none is routed, and says so in the metric", async () => {
    source.setRouted(NETWORK, LIGHT_0, false);
    source.setRouted(NETWORK, LIGHT_1, false);
    await waitFor(
      async () => (await metric(registry, "lightfleet_gateway_panic_mode", { network: NETWORK })) === 1,
      {
        what: "panic mode",
      },
    );
    expect(allAnswered(await reads(10))).toBe(true);
    source.setRouted(NETWORK, LIGHT_0, true);
    source.setRouted(NETWORK, LIGHT_1, true);
    await waitFor(
      async () => (await metric(registry, "lightfleet_gateway_panic_mode", { network: NETWORK })) === 0,
      {
        what: "panic mode to end",
      },
    );
  });

  it("answers every read while a routed node dies under load", async () => {
    const counts = async () => ({
      retries: await metric(registry, "lightfleet_gateway_retries_total", {}),
      hedges: await metric(registry, "lightfleet_gateway_hedges_total", { outcome: "sent" }),
      refused: await metric(registry, "lightfleet_gateway_upstream_requests_total", {
        upstream: LIGHT_1,
        outcome: "connection",
      }),
    });
    const before = await counts();
    const load = Array.from({ length: 10 }, () => reads(20));
    await devnet.fault(LIGHT_1, { kind: "kill" });
    const during = await Promise.all([...load, ...Array.from({ length: 10 }, () => reads(20))]);
    // Listed rather than counted, so a failure shows what the client got instead.
    expect(during.flatMap((d) => (allAnswered(d) ? [] : [d.body]))).toEqual([]);
    const after = await counts();
    const refused = after.refused - before.refused;
    expect(refused).toBeGreaterThan(0);
    // Every attempt that met the dead node's closed port was covered: retried on the other node, or (a read slower
    // than usual on a loaded machine is hedged) its call had a second attempt in flight already, which answers it
    // and needs no retry. Without hedges this is one retry per refused attempt.
    expect(after.retries - before.retries + (after.hedges - before.hedges)).toBeGreaterThanOrEqual(refused);
    await devnet.fault(LIGHT_1, { kind: "heal" });
  });
});
