import { createServer } from "node:http";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Duplex } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket, { WebSocketServer } from "ws";
import type { Devnet } from "../../src/devnet/devnet.js";
import type { Gateway } from "../../src/gateway/gateway.js";
import {
  HeadsNotification,
  newSubscriptionId,
  subscriptionIdBytes,
} from "../../src/gateway/ws/headsNotification.js";
import { textFrameHeader } from "../../src/gateway/ws/textFrame.js";
import { startTestDevnet } from "../support/devnet.js";
import { waitFor } from "../support/waitFor.js";
import type { Json } from "./support.js";
import { CHAIN_ID, NETWORK, rawWs, startTestGateway, waitForServedHead } from "./support.js";

describe("text frame headers (RFC 6455 5.2, unmasked, FIN, opcode 1)", () => {
  it("use the 7-bit, 16-bit and 64-bit length forms at their bounds", () => {
    expect([...textFrameHeader(0)]).toEqual([0x81, 0]);
    expect([...textFrameHeader(125)]).toEqual([0x81, 125]);
    expect([...textFrameHeader(126)]).toEqual([0x81, 126, 0, 126]);
    expect([...textFrameHeader(65_535)]).toEqual([0x81, 126, 0xff, 0xff]);
    expect([...textFrameHeader(65_536)]).toEqual([0x81, 127, 0, 0, 0, 0, 0, 1, 0, 0]);
    expect(() => textFrameHeader(-1)).toThrow(RangeError);
  });
});

describe("pre-framed newHeads notifications on a ws connection", () => {
  let server: Server;
  let url: string;
  const wss = new WebSocketServer({ noServer: true });
  let accepted: (pair: { ws: WebSocket; socket: Duplex }) => void;

  beforeAll(async () => {
    server = createServer();
    server.on("upgrade", (req, socket, head) =>
      wss.handleUpgrade(req, socket, head, (ws) => accepted({ ws, socket })),
    );
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `ws://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    wss.close();
    await new Promise((resolve) => server.close(resolve));
  });

  it("decode in ws's own client, of every length form, in order with frames ws sends itself", async () => {
    const connected = new Promise<{ ws: WebSocket; socket: Duplex }>((resolve) => (accepted = resolve));
    const client = new WebSocket(url);
    const received: string[] = [];
    client.on("message", (data, isBinary) => {
      expect(isBinary).toBe(false);
      received.push(String(data));
    });
    const { ws, socket } = await connected;
    const id = newSubscriptionId();
    const headers = [
      { n: "0x1" },
      { n: "0x2", extraData: `0x${"ab".repeat(200)}` },
      { n: "0x3", big: "é".repeat(40_000) },
    ];
    for (const header of headers) {
      new HeadsNotification(JSON.stringify(header)).writeTo(socket, subscriptionIdBytes(id));
      ws.send(JSON.stringify({ jsonrpc: "2.0", id: header.n, result: "between" }));
    }
    await waitFor(() => received.length === 6, { what: "six messages" });
    client.close();
    const parsed = received.map((text) => JSON.parse(text) as Json);
    headers.forEach((header, i) => {
      expect(parsed[2 * i]).toEqual({
        jsonrpc: "2.0",
        method: "eth_subscription",
        params: { subscription: id, result: header },
      });
      expect(parsed[2 * i + 1]).toEqual({ jsonrpc: "2.0", id: header.n, result: "between" });
    });
  });
});

describe("newHeads fan-out through the gateway", () => {
  let devnet: Devnet;
  let gateway: Gateway;
  let wsUrl: string;

  beforeAll(async () => {
    devnet = await startTestDevnet({ networks: [{ name: NETWORK, chainId: CHAIN_ID, lightNodes: 1 }] });
    for (let i = 0; i < 3; i++) await devnet.mine(NETWORK);
    ({ gateway, wsUrl } = await startTestGateway(devnet));
    await waitForServedHead(gateway, devnet);
  });
  afterAll(async () => {
    await gateway?.stop();
  });

  it("gives every subscription every head once, in order, under ids unique across connections", async () => {
    const CONNECTIONS = 40;
    const clients = await Promise.all(Array.from({ length: CONNECTIONS }, () => rawWs(wsUrl)));
    try {
      // Two subscriptions on each connection, and on one of them a logs subscription too (the queued path).
      const ids: string[][] = [];
      for (const client of clients) {
        const first = await client.call("eth_subscribe", ["newHeads"]);
        const second = await client.call("eth_subscribe", ["newHeads"]);
        ids.push([first.result as string, second.result as string]);
      }
      await clients[0]!.call("eth_subscribe", ["logs", {}]);
      const all = ids.flat();
      expect(all.every((id) => /^0x[0-9a-f]{32}$/.test(id))).toBe(true);
      expect(new Set(all).size).toBe(2 * CONNECTIONS);

      const start = devnet.head(NETWORK).number;
      const BLOCKS = 3;
      for (let i = 0; i < BLOCKS; i++) {
        await devnet.mine(NETWORK);
        // Calls answered by ws's own frames, interleaved with the pre-framed notifications.
        void clients[i]!.call("eth_chainId");
      }
      const expected = Array.from({ length: BLOCKS }, (_, i) => `0x${(start + 1 + i).toString(16)}`);
      const headsOf = (messages: Json[], id: string) =>
        messages
          .filter((m) => m.method === "eth_subscription" && m.params.subscription === id)
          .map((m) => m.params.result.number as string);
      await waitFor(
        () => clients.every((c, i) => ids[i]!.every((id) => headsOf(c.messages, id).length >= BLOCKS)),
        { what: `${BLOCKS} heads on every subscription` },
      );
      clients.forEach((client, i) => {
        for (const id of ids[i]!) expect(headsOf(client.messages, id)).toEqual(expected);
        // Nothing addressed to another connection's subscription.
        const foreign = client.messages.filter(
          (m) =>
            m.method === "eth_subscription" &&
            m.params.result.number &&
            !ids[i]!.includes(m.params.subscription),
        );
        expect(foreign).toEqual([]);
      });
      expect(clients[0]!.messages.filter((m) => m.result === `0x${CHAIN_ID.toString(16)}`)).toHaveLength(1);
    } finally {
      for (const client of clients) client.close();
    }
  });

  it("stops the heads of an unsubscribed subscription and keeps the connection's others, with and without logs", async () => {
    const client = await rawWs(wsUrl);
    try {
      const subscribe = async (params: unknown[]) =>
        (await client.call("eth_subscribe", params)).result as string;
      const headsOf = (id: string) =>
        client.messages
          .filter((m) => m.method === "eth_subscription" && m.params.subscription === id)
          .map((m) => m.params.result.number as string);
      const mined = async () => {
        await devnet.mine(NETWORK);
        return `0x${devnet.head(NETWORK).number.toString(16)}`;
      };
      const [kept, dropped] = [await subscribe(["newHeads"]), await subscribe(["newHeads"])];
      const logs = await subscribe(["logs", {}]);
      const first = await mined();
      await waitFor(() => headsOf(kept).includes(first) && headsOf(dropped).includes(first), {
        what: "the first head on both subscriptions",
      });

      // With a logs subscription on the connection (the queued path), then without (the heads-only path).
      expect((await client.call("eth_unsubscribe", [dropped])).result).toBe(true);
      const second = await mined();
      await waitFor(() => headsOf(kept).includes(second), { what: "the second head" });
      expect((await client.call("eth_unsubscribe", [logs])).result).toBe(true);
      const third = await mined();
      await waitFor(() => headsOf(kept).includes(third), { what: "the third head" });
      const later = await subscribe(["newHeads"]);
      const fourth = await mined();
      await waitFor(() => headsOf(kept).includes(fourth) && headsOf(later).includes(fourth), {
        what: "the fourth head on both subscriptions",
      });

      expect(headsOf(kept)).toEqual([first, second, third, fourth]);
      expect(headsOf(dropped)).toEqual([first]);
      expect(headsOf(later)).toEqual([fourth]);
    } finally {
      client.close();
    }
  });
});
