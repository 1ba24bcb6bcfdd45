import { Registry } from "prom-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config/loadConfig.js";
import type { AnvilNode } from "../../src/devnet/anvil.js";
import { startAnvil } from "../../src/devnet/anvil.js";
import type { Gateway } from "../../src/gateway/gateway.js";
import { startGateway } from "../../src/gateway/gateway.js";
import { StaticUpstreamSource } from "../../src/gateway/upstreams/staticSource.js";
import { silentLogger } from "../../src/log/logger.js";
import { HttpRpcClient } from "../../src/rpc/httpRpcClient.js";
import { waitFor } from "../support/waitFor.js";
import { post, rawWs } from "./support.js";
import type { Json } from "./support.js";

const hex = (n: number) => `0x${n.toString(16)}`;
const BLOCKS = 1_200;

describe("eth_getLogs window at the default limit (1000 blocks) over HTTP, batch and WebSocket", () => {
  let node: AnvilNode;
  let gateway: Gateway;
  let head: number;
  let headHash: string;

  beforeAll(async () => {
    node = await startAnvil({ name: "logs", chainId: 31_337, noMining: true });
    const rpc = new HttpRpcClient(node.httpUrl, 10_000);
    await rpc.call("anvil_mine", [hex(BLOCKS)]);
    const config = parseConfig({
      gateway: { host: "127.0.0.1", port: 0, headPollInterval: "100ms" },
      networks: [
        {
          name: "devnet",
          chainId: 31_337,
          blockTime: "1s",
          reservedPeers: [{ name: "logs", http: node.httpUrl }],
          gateway: { default: true },
        },
      ],
    });
    gateway = await startGateway({
      config,
      source: new StaticUpstreamSource([
        { name: "logs", network: "devnet", httpUrl: node.httpUrl, wsUrl: node.wsUrl, routed: true },
      ]),
      logger: silentLogger(),
      registry: new Registry(),
    });
    head = await waitFor(() => (gateway.servedHead("devnet") === BLOCKS ? BLOCKS : undefined), {
      what: `served head ${BLOCKS}`,
    });
    headHash = ((await rpc.call("eth_getBlockByNumber", [hex(head), false])) as { hash: string }).hash;
  });

  afterAll(async () => {
    await gateway?.stop();
    await node?.stop();
  });

  const table = () => [
    { what: "inside the window", filter: { fromBlock: hex(head - 10), toBlock: "latest" }, code: undefined },
    { what: "exactly 1000 below the head", filter: { fromBlock: hex(head - 1000) }, code: undefined },
    { what: "1001 below the head", filter: { fromBlock: hex(head - 1001) }, code: -32005 },
    { what: "earliest", filter: { fromBlock: "earliest", toBlock: "latest" }, code: -32005 },
    { what: "tags only", filter: { fromBlock: "latest", toBlock: "latest" }, code: undefined },
    { what: "a blockHash", filter: { blockHash: headHash }, code: undefined },
    {
      what: "toBlock past the head",
      filter: { fromBlock: hex(head - 1), toBlock: hex(head + 1) },
      code: -32602,
    },
    {
      what: "fromBlock > toBlock",
      filter: { fromBlock: hex(head - 1), toBlock: hex(head - 2) },
      code: -32602,
    },
  ];

  it("answers every row alike on each transport, naming the limit and the earliest block when refusing", async () => {
    const rows = table();
    const calls = rows.map((row, i) => ({
      jsonrpc: "2.0",
      id: i,
      method: "eth_getLogs",
      params: [row.filter],
    }));
    const single = await Promise.all(calls.map(async (call) => (await post(gateway.url, call)).body as Json));
    const batch = (await post(gateway.url, calls)).body as Json[];
    const ws = await rawWs(`${gateway.url.replace("http", "ws")}/ws`);
    try {
      const overWs = await Promise.all(calls.map((call) => ws.call(call.method, call.params)));
      rows.forEach((row, i) => {
        for (const [transport, answer] of [
          ["http", single[i]],
          ["batch", batch.find((a) => a.id === i)],
          ["ws", overWs[i]],
        ] as const) {
          const label = `${row.what} over ${transport}`;
          if (row.code === undefined) expect(Array.isArray(answer.result), label).toBe(true);
          else expect(answer.error?.code, label).toBe(row.code);
          if (row.code === -32005)
            expect(answer.error.data, label).toEqual({
              limit: 1000,
              earliestBlock: hex(head - 1000),
              head: hex(head),
            });
        }
      });
    } finally {
      ws.close();
    }
  });
});
