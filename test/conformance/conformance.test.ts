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
import { conformanceCalls } from "./calls.js";
import { INTENDED_DIFFERENCES } from "./intendedDifferences.js";
import type { ConformanceNode, Implementation } from "./nodes.js";
import { buildChain, startNode } from "./nodes.js";

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
      const stale = intended.filter((c) => !differing.includes(c));
      if (unlisted.length > 0) console.log(report.join("\n"));
      expect(unlisted).toEqual([]);
      expect(stale).toEqual([]);
    }, 120_000);
  },
);
