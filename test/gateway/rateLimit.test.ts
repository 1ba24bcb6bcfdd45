import type { Registry } from "prom-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Gateway } from "../../src/gateway/gateway.js";
import WebSocket from "ws";
import { startTestDevnet } from "../support/devnet.js";
import { waitFor } from "../support/waitFor.js";
import { NETWORK, post, rawWs, startTestGateway, waitForServedHead } from "./support.js";

const call = (id: number) => ({ jsonrpc: "2.0", id, method: "eth_blockNumber" });

describe("per-client-address limits (rate: burst 5, practically no refill; 3 WebSockets)", () => {
  let gateway: Gateway;
  let registry: Registry;
  let wsUrl: string;
  const cleanup: Array<() => unknown> = [];

  beforeAll(async () => {
    const devnet = await startTestDevnet({
      networks: [{ name: NETWORK, chainId: 31_337, fullNodes: 1, lightNodes: 1 }],
    });
    await devnet.mine(NETWORK);
    ({ gateway, registry, wsUrl } = await startTestGateway(devnet, {
      trustForwardedFor: true,
      maxWsConnectionsPerAddress: 3,
      rateLimit: { requestsPerSecond: 0.01, burst: 5 },
    }));
    await waitForServedHead(gateway, devnet);
  });

  afterAll(async () => {
    for (const fn of cleanup.reverse()) await fn();
    await gateway?.stop();
  });

  it("counts batch items and answers what does not fit with -32005 and HTTP 429, per address", async () => {
    const client = { "x-forwarded-for": "203.0.113.7" };
    const first = await post(gateway.url, [call(1), call(2), call(3), call(4)], client);
    expect(first.status).toBe(200);
    expect(first.body.map((r: { result?: string }) => typeof r.result)).toEqual(Array(4).fill("string"));

    // One call left in the bucket: a batch of two does not fit and is refused whole, ids kept.
    const refused = await fetch(gateway.url, {
      method: "POST",
      headers: { "content-type": "application/json", ...client },
      body: JSON.stringify([call(5), call(6)]),
    });
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    const body = (await refused.json()) as Array<{ id: number; error: { code: number } }>;
    expect(body.map((r) => [r.id, r.error.code])).toEqual([
      [5, -32005],
      [6, -32005],
    ]);

    expect((await post(gateway.url, call(7), client)).status).toBe(200);
    const single = await post(gateway.url, call(8), client);
    expect(single.status).toBe(429);
    expect(single.body).toMatchObject({ id: 8, error: { code: -32005 } });

    // Another address (as the proxy in front saw it: the last X-Forwarded-For entry) has its own budget.
    const other = await post(gateway.url, call(9), { "x-forwarded-for": "203.0.113.7, 198.51.100.2" });
    expect(other.status).toBe(200);

    expect(await registry.metrics()).toMatch(
      /lightfleet_gateway_requests_total\{network="devnet",method="eth_blockNumber",outcome="rate_limited"\} 3/,
    );
  });

  it("admits a batch larger than the burst from a full budget, then makes the address wait it off honestly", async () => {
    const client = { "x-forwarded-for": "203.0.113.40" };
    const big = await post(gateway.url, [1, 2, 3, 4, 5, 6, 7].map(call), client);
    expect(big.status).toBe(200);
    expect(big.body.map((r: { result?: string }) => typeof r.result)).toEqual(Array(7).fill("string"));
    const after = await fetch(gateway.url, {
      method: "POST",
      headers: { "content-type": "application/json", ...client },
      body: JSON.stringify(call(8)),
    });
    expect(after.status).toBe(429);
    // Two calls owed, one to have: 3 calls at 0.01/s.
    expect(Number(after.headers.get("retry-after"))).toBe(300);
    const wait = ((await after.json()) as { error: { data: { retryAfterMs: number } } }).error.data
      .retryAfterMs;
    expect(wait).toBeGreaterThan(299_000);
    expect(wait).toBeLessThanOrEqual(300_000);
  });

  it("applies the same budget to WebSocket frames of the address", async () => {
    const ws = await rawWs(wsUrl);
    cleanup.push(() => ws.close());
    // The WebSocket's address is 127.0.0.1 (no proxy header): a fresh budget of 5.
    for (let i = 0; i < 5; i++) expect((await ws.call("eth_blockNumber")).result).toMatch(/^0x/);
    const answer = await ws.call("eth_blockNumber");
    expect(answer.error.code).toBe(-32005);
    expect(answer.error.data.retryAfterMs).toBeGreaterThan(0);
  });

  it("caps the WebSocket connections of one address with HTTP 429 on the upgrade, others unaffected", async () => {
    const open = (address: string) =>
      new Promise<WebSocket | number>((resolve) => {
        const ws = new WebSocket(wsUrl, { headers: { "x-forwarded-for": address } });
        cleanup.push(() => ws.terminate());
        ws.once("open", () => resolve(ws));
        ws.once("unexpected-response", (_req, res) => resolve(res.statusCode ?? 0));
        ws.once("error", () => undefined);
      });
    const first = await Promise.all([open("192.0.2.1"), open("192.0.2.1"), open("192.0.2.1")]);
    expect(first.every((ws) => ws instanceof WebSocket)).toBe(true);
    expect(await open("192.0.2.1")).toBe(429);
    expect(await open("192.0.2.2")).toBeInstanceOf(WebSocket);
    // A closed connection frees its place.
    (first[0] as WebSocket).close();
    await waitFor(
      async () => {
        const again = await open("192.0.2.1");
        return again instanceof WebSocket;
      },
      { what: "a freed place for the address" },
    );
  });
});
