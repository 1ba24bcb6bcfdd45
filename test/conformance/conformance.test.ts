import { Registry } from "prom-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { parseConfig } from "../../src/config/loadConfig.js";
import type { Gateway } from "../../src/gateway/gateway.js";
import { startGateway } from "../../src/gateway/gateway.js";
import { StaticUpstreamSource } from "../../src/gateway/upstreams/staticSource.js";
import { silentLogger } from "../../src/log/logger.js";
import { waitFor } from "../support/waitFor.js";
import type { ChainFacts, ConformanceCall } from "./calls.js";
import { NOTIFICATIONS, conformanceCalls } from "./calls.js";
import { INTENDED_DIFFERENCES } from "./intendedDifferences.js";
import type { ConformanceNode, Implementation } from "./nodes.js";
import { buildChain, emitLog, startNode } from "./nodes.js";

/** One answer as a client sees it: the HTTP status (0 over WebSocket) and the body's text. */
interface Seen {
  status: number;
  text: string;
}

/**
 * Normalising, the only liberty taken with the bytes: white space at the end (geth ends its bodies with a newline).
 * Ids need none: both sides get the same call and echo its id; the table makes no subscription or filter it compares.
 */
function normalise(seen: Seen): Seen {
  return { status: seen.status, text: seen.text.trimEnd() };
}

async function overHttp(url: string, call: ConformanceCall): Promise<Seen> {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: typeof call.body === "string" ? call.body : JSON.stringify(call.body),
  });
  return { status: response.status, text: await response.text() };
}

async function overWs(url: string, call: ConformanceCall): Promise<Seen> {
  const socket = new WebSocket(url);
  try {
    await new Promise((resolve, reject) => {
      socket.once("open", resolve);
      socket.once("error", reject);
    });
    const answer = new Promise<string>((resolve) => socket.once("message", (data) => resolve(String(data))));
    socket.send(typeof call.body === "string" ? call.body : JSON.stringify(call.body));
    const text = await Promise.race([
      answer,
      new Promise<never>((_, reject) =>
        setTimeout(() => reject(new Error(`no answer to ${call.name}`)), 10_000),
      ),
    ]);
    return { status: 0, text };
  } finally {
    socket.close();
  }
}

const send = (http: string, ws: string, call: ConformanceCall) =>
  call.transport === "http" ? overHttp(http, call) : overWs(ws, call);

describe.each<Implementation>(["anvil", "geth"])(
  "conformance with %s: the node directly and through the gateway",
  (implementation) => {
    let node: ConformanceNode | undefined;
    let gateway: Gateway | undefined;
    let chain: ChainFacts;
    let missing: string | undefined;

    beforeAll(async () => {
      const started = await startNode(implementation);
      if ("missing" in started) {
        missing = started.missing;
        return;
      }
      node = started;
      chain = await buildChain(node);
      const config = parseConfig({
        gateway: { host: "127.0.0.1", port: 0, headPollInterval: "100ms" },
        networks: [
          {
            name: "conformance",
            chainId: node.chainId,
            blockTime: "1s",
            reservedPeers: [{ name: "node", http: node.httpUrl, ws: node.wsUrl }],
            gateway: { default: true },
          },
        ],
      });
      gateway = await startGateway({
        config,
        source: new StaticUpstreamSource([
          { name: "node", network: "conformance", httpUrl: node.httpUrl, wsUrl: node.wsUrl, routed: true },
        ]),
        logger: silentLogger(),
        registry: new Registry(),
      });
      const served = gateway;
      await waitFor(
        () => {
          const tags = served.blockTags("conformance");
          return (
            served.servedHead("conformance") === chain.head &&
            tags.finalized?.number === chain.finalized &&
            tags.safe?.number === chain.safe
          );
        },
        { what: `the gateway serving head ${chain.head}, finalized ${chain.finalized}, safe ${chain.safe}` },
      );
    }, 180_000);

    afterAll(async () => {
      await gateway?.stop();
      await node?.stop();
    });

    it("answers every call of the table as the node does, except the intended differences", async (context) => {
      if (missing) {
        console.warn(`skipped: ${missing}`);
        context.skip();
      }
      const gatewayWs = `${gateway!.url.replace("http", "ws")}/ws`;
      const differing: string[] = [];
      const report: string[] = [];
      for (const call of conformanceCalls(chain)) {
        const direct = normalise(await send(node!.httpUrl, node!.wsUrl, call));
        const through = normalise(await send(gateway!.url, gatewayWs, call));
        const same = direct.status === through.status && direct.text === through.text;
        if (!same) {
          differing.push(call.name);
          report.push(
            `${call.name}\n  node    ${direct.status} ${direct.text.slice(0, 300)}\n  gateway ${through.status} ${through.text.slice(0, 300)}`,
          );
        }
      }
      const intended = INTENDED_DIFFERENCES.filter((d) => d.on.includes(implementation)).flatMap(
        (d) => d.calls,
      );
      // Both ways: an unlisted difference is a defect, a listed one that no longer differs is a stale list.
      const unlisted = differing.filter((c) => !intended.includes(c));
      const table = new Set(conformanceCalls(chain).map((c) => c.name));
      const stale = intended.filter((c) => table.has(c) && !differing.includes(c));
      if (unlisted.length > 0) console.log(report.join("\n"));
      expect(unlisted).toEqual([]);
      expect(stale).toEqual([]);
    }, 120_000);

    // Last: it adds a block to the chain the table reads.
    it("sends the same newHeads and logs notifications as the node, ids aside", async (context) => {
      if (missing) context.skip();
      const sides = await Promise.all(
        [node!.wsUrl, `${gateway!.url.replace("http", "ws")}/ws`].map((url) =>
          subscriber(url, chain.emitter),
        ),
      );
      try {
        await emitLog(node!, chain);
        const notifications = await Promise.all(
          sides.map((side) =>
            waitFor(() => (side.notifications.length >= 2 ? side.notifications : undefined), {
              what: "a newHeads and a logs notification",
            }),
          ),
        );
        const intended = INTENDED_DIFFERENCES.filter((d) => d.on.includes(implementation)).flatMap(
          (d) => d.calls,
        );
        for (const [name, subscription] of Object.entries(NOTIFICATIONS)) {
          const [direct, through] = notifications.map((texts) =>
            texts.filter((t) => t.includes(subscription)).map((t) => (name === HEADS ? headerValue(t) : t)),
          );
          expect(direct).toHaveLength(1);
          // Listed: must differ (the list stays true); else: the same bytes (newHeads: the same value).
          if (intended.includes(name)) expect(through, name).not.toEqual(direct);
          else expect(through, name).toEqual(direct);
        }
      } finally {
        for (const side of sides) side.socket.close();
      }
    });
  },
);

const HEADS = "ws newHeads notification";

/**
 * A newHeads notification as a value without its null fields: the gateway announces a block from the header the node
 * sent when it follows the node's subscription, but from eth_getBlockByNumber when it fills a gap or has just started
 * (or the node's subscription is down), and geth writes that with its fields in another order and without the null
 * ones (`blockAccessListHash`, `slotNumber`). The values must be the same.
 */
function headerValue(text: string): unknown {
  const message = JSON.parse(text) as { params: { result: Record<string, unknown> } };
  message.params.result = Object.fromEntries(
    Object.entries(message.params.result).filter(([, v]) => v !== null),
  );
  return message;
}

/** A WebSocket with a newHeads and a logs subscription; notifications are kept with their ids replaced by names. */
async function subscriber(
  url: string,
  emitter: string,
): Promise<{ socket: WebSocket; notifications: string[] }> {
  const socket = new WebSocket(url);
  await new Promise((resolve, reject) => {
    socket.once("open", resolve);
    socket.once("error", reject);
  });
  const names = new Map<string, string>();
  const notifications: string[] = [];
  const answers = new Map<number, string>();
  socket.on("message", (data) => {
    const text = String(data);
    const message = JSON.parse(text) as { id?: number; result?: string; params?: { subscription: string } };
    if (message.id !== undefined) answers.set(message.id, message.result!);
    else if (message.params) {
      const id = message.params.subscription;
      notifications.push(text.replace(id, names.get(id) ?? "unknown"));
    }
  });
  const subscribe = async (id: number, params: unknown[], name: string) => {
    socket.send(JSON.stringify({ jsonrpc: "2.0", id, method: "eth_subscribe", params }));
    const subscription = await waitFor(() => answers.get(id), { what: `subscription ${name}` });
    names.set(subscription, name);
  };
  await subscribe(1, ["newHeads"], NOTIFICATIONS["ws newHeads notification"]);
  await subscribe(2, ["logs", { address: emitter }], NOTIFICATIONS["ws logs notification"]);
  return { socket, notifications };
}
