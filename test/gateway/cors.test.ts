import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Gateway } from "../../src/gateway/gateway.js";
import { startTestDevnet } from "../support/devnet.js";
import { CHAIN_ID, NETWORK, startTestGateway, waitForServedHead } from "./support.js";

describe("CORS with a list of allowed origins", () => {
  let gateway: Gateway;
  /** With the default, "*". */
  let open: Gateway;

  beforeAll(async () => {
    const devnet = await startTestDevnet({
      networks: [{ name: NETWORK, chainId: CHAIN_ID, fullNodes: 1, lightNodes: 1 }],
    });
    await devnet.mine(NETWORK);
    ({ gateway } = await startTestGateway(devnet, { corsOrigins: ["https://dapp.example"] }));
    ({ gateway: open } = await startTestGateway(devnet));
    await waitForServedHead(gateway, devnet);
    await waitForServedHead(open, devnet);
  });

  afterAll(async () => {
    await gateway?.stop();
    await open?.stop();
  });

  it("answers a browser's preflight for an allowed origin, echoing it with Vary: Origin", async () => {
    const preflight = await fetch(gateway.url, {
      method: "OPTIONS",
      headers: {
        origin: "https://dapp.example",
        "access-control-request-method": "POST",
        "access-control-request-headers": "content-type",
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get("access-control-allow-origin")).toBe("https://dapp.example");
    expect(preflight.headers.get("access-control-allow-methods")).toContain("POST");
    expect(preflight.headers.get("access-control-allow-headers")).toContain("content-type");
    expect(preflight.headers.get("vary")).toMatch(/origin/i);

    const call = await fetch(gateway.url, {
      method: "POST",
      headers: { origin: "https://dapp.example", "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_chainId" }),
    });
    expect(call.headers.get("access-control-allow-origin")).toBe("https://dapp.example");
    expect(((await call.json()) as { result: string }).result).toBe(`0x${CHAIN_ID.toString(16)}`);
  });

  it("puts only Access-Control-Allow-Origin on a browser's call, and no CORS header on a call without Origin", async () => {
    const body = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_blockNumber" });
    const headers = { "content-type": "application/json" };
    // The preflight's headers mean nothing on the call itself (Fetch standard, CORS check): not sent on every answer.
    const browser = await fetch(gateway.url, {
      method: "POST",
      headers: { ...headers, origin: "https://dapp.example" },
      body,
    });
    expect(browser.headers.get("access-control-allow-origin")).toBe("https://dapp.example");
    expect(browser.headers.get("vary")).toMatch(/origin/i);
    for (const name of [
      "access-control-allow-methods",
      "access-control-allow-headers",
      "access-control-max-age",
    ])
      expect(browser.headers.get(name)).toBeNull();
    const anyOrigin = await fetch(open.url, {
      method: "POST",
      headers: { ...headers, origin: "https://a.example" },
      body,
    });
    expect(anyOrigin.headers.get("access-control-allow-origin")).toBe("*");
    expect(anyOrigin.headers.get("access-control-allow-methods")).toBeNull();
    // A client that is not a browser sends no Origin, and CORS means nothing to it.
    for (const url of [gateway.url, open.url]) {
      const server = await fetch(url, { method: "POST", headers, body });
      expect(server.status).toBe(200);
      expect([...server.headers.keys()].filter((name) => name.startsWith("access-control-"))).toEqual([]);
    }
  });

  it("gives another origin no CORS headers, so the browser refuses it", async () => {
    const preflight = await fetch(gateway.url, {
      method: "OPTIONS",
      headers: { origin: "https://evil.example", "access-control-request-method": "POST" },
    });
    expect(preflight.headers.get("access-control-allow-origin")).toBeNull();
  });
});
