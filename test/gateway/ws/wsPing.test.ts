import type { Registry } from "prom-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import type { Devnet } from "../../../src/devnet/devnet.js";
import type { Gateway } from "../../../src/gateway/gateway.js";
import { startTestDevnet } from "../../support/devnet.js";
import { waitFor } from "../../support/waitFor.js";
import { CHAIN_ID, NETWORK, startTestGateway, waitForServedHead } from "../support.js";

/** Clients cut off for not answering pings so far. */
async function pingTimeouts(registry: Registry): Promise<number> {
  const metric = await registry.getSingleMetric("lightfleet_gateway_ws_disconnects_total")?.get();
  return metric?.values.find((v) => v.labels.reason === "ping-timeout")?.value ?? 0;
}

describe("WebSocket pings (one timer for every connection)", () => {
  let devnet: Devnet;
  let gateway: Gateway;
  let registry: Registry;
  let wsUrl: string;
  const sockets: WebSocket[] = [];

  beforeAll(async () => {
    devnet = await startTestDevnet({ networks: [{ name: NETWORK, chainId: CHAIN_ID, lightNodes: 1 }] });
    ({ gateway, registry, wsUrl } = await startTestGateway(devnet, { pingInterval: "200ms" }));
    await waitForServedHead(gateway, devnet);
  });

  afterAll(async () => {
    for (const socket of sockets) socket.terminate();
    await gateway?.stop();
  });

  const open = async (options: WebSocket.ClientOptions = {}) => {
    const socket = new WebSocket(wsUrl, options);
    sockets.push(socket);
    await new Promise((resolve, reject) => socket.once("open", resolve).once("error", reject));
    return socket;
  };

  it("cuts off a client that does not answer pings, and keeps every client that does", async () => {
    const answering = await Promise.all([open(), open()]);
    const pings = answering.map(() => 0);
    answering.forEach((socket, i) => socket.on("ping", () => pings[i]!++));
    const silent = await open({ autoPong: false });
    let silentPings = 0;
    silent.on("ping", () => silentPings++);
    const silentClosed = new Promise<void>((resolve) => silent.once("close", () => resolve()));

    await waitFor(async () => (await pingTimeouts(registry)) === 1, {
      what: "the client that does not answer pings to be cut off",
    });
    await silentClosed;
    expect(silentPings).toBeGreaterThanOrEqual(1);
    // Pinged again and again since, and never cut off.
    await waitFor(() => pings.every((n) => n >= 4), { what: "the answering clients to be pinged 4 times" });
    expect(answering.map((s) => s.readyState)).toEqual([WebSocket.OPEN, WebSocket.OPEN]);
    expect(await pingTimeouts(registry)).toBe(1);
    // Still served.
    answering[0]!.send(JSON.stringify({ jsonrpc: "2.0", id: 7, method: "eth_chainId" }));
    const answer = await new Promise<{ id: number; result: string }>((resolve) =>
      answering[0]!.once("message", (data: Buffer) =>
        resolve(JSON.parse(String(data)) as { id: number; result: string }),
      ),
    );
    expect(answer).toEqual({ jsonrpc: "2.0", id: 7, result: `0x${CHAIN_ID.toString(16)}` });
  });
});
