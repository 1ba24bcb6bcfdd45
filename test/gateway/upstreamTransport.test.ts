import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Devnet } from "../../src/devnet/devnet.js";
import { DEV_ACCOUNT } from "../../src/devnet/devTransactions.js";
import type { Gateway } from "../../src/gateway/gateway.js";
import { freePort } from "../../src/process/freePort.js";
import { startTestDevnet } from "../support/devnet.js";
import { waitFor } from "../support/waitFor.js";
import { CHAIN_ID, NETWORK, post, startTestGateway, waitForServedHead } from "./support.js";
import type { Json } from "./support.js";

/**
 * How the gateway reaches a node: calls over the node's WebSocket when it is open, HTTP otherwise and for unknown or
 * bulky methods. Each gateway here has one of the node's two ports closed, so only the path that works can answer.
 */
describe("calls reach a node over its WebSocket, or over HTTP while that is down", () => {
  let devnet: Devnet;
  const gateways: Gateway[] = [];

  beforeAll(async () => {
    devnet = await startTestDevnet({ networks: [{ name: NETWORK, chainId: CHAIN_ID, lightNodes: 1 }] });
    await devnet.mine(NETWORK);
    await devnet.mine(NETWORK);
  });
  afterAll(async () => {
    for (const gateway of gateways) await gateway.stop();
    await devnet?.stop();
  });

  async function gatewayWith(
    closed: "httpUrl" | "wsUrl",
  ): Promise<{ gateway: Gateway; sockets: () => Promise<number> }> {
    const nowhere = `${closed === "httpUrl" ? "http" : "ws"}://127.0.0.1:${await freePort()}`;
    const { gateway, registry } = await startTestGateway(devnet, {}, {}, (u) => ({
      ...u,
      [closed]: nowhere,
    }));
    const sockets = async () =>
      (await registry.getSingleMetric("lightfleet_gateway_upstream_call_sockets")!.get()).values[0]?.value ??
      NaN;
    gateways.push(gateway);
    // Without HTTP the node's head is only known from its subscription, which announces new blocks.
    if (closed === "httpUrl")
      await waitFor(async () => (await devnet.mine(NETWORK), gateway.servedHead(NETWORK) !== undefined), {
        what: "a head from the node's subscription",
      });
    await waitForServedHead(gateway, devnet);
    return { gateway, sockets };
  }

  const block = { jsonrpc: "2.0", id: "b", method: "eth_getBlockByNumber", params: ["0x1", false] };
  const balance = { jsonrpc: "2.0", id: 7, method: "eth_getBalance", params: [DEV_ACCOUNT, "latest"] };
  const logs = {
    jsonrpc: "2.0",
    id: 8,
    method: "eth_getLogs",
    params: [{ fromBlock: "0x1", toBlock: "0x1" }],
  };

  it("answers standard calls over the WebSocket alone, with the client's ids, one by one and in a batch", async () => {
    const { gateway, sockets } = await gatewayWith("httpUrl");
    // The calls' socket opens beside the head subscription's; until then calls would take the closed HTTP port.
    await waitFor(async () => ((await post(gateway.url, block)).body as Json).result !== undefined, {
      what: "the calls WebSocket",
    });
    expect(await sockets()).toBe(1);
    const one = (await post(gateway.url, block)).body as Json;
    expect(one.id).toBe("b");
    expect(one.result.number).toBe("0x1");
    const batch = (
      await post(
        gateway.url,
        Array.from({ length: 20 }, (_, id) => ({ ...balance, id })),
      )
    ).body as Json[];
    expect(batch.map((r) => r.id)).toEqual(Array.from({ length: 20 }, (_, id) => id));
    expect(batch.every((r) => BigInt(r.result as string) > 0n)).toBe(true);
    // The node's own error, as the node gave it.
    const missing = (await post(gateway.url, { ...balance, params: ["0x12"] })).body as Json;
    expect(missing.error.code).toBe(-32602);
    // eth_getLogs never shares the socket (its answers can run to megabytes): with HTTP closed it has no way in.
    const refused = (await post(gateway.url, logs)).body as Json;
    expect(refused.error.message).toBe("upstream unavailable");
  });

  it("answers over HTTP while the node's WebSocket cannot be reached", async () => {
    const { gateway, sockets } = await gatewayWith("wsUrl");
    expect(await sockets()).toBe(0);
    expect(((await post(gateway.url, block)).body as Json).result.number).toBe("0x1");
    expect(((await post(gateway.url, logs)).body as Json).result).toEqual([]);
  });
});
