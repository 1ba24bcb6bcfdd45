import { afterAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { SLOW_PROFILES, latencySampler, seededRandom } from "../../src/devnet/latencyProfile.js";
import { HttpRpcClient } from "../../src/rpc/httpRpcClient.js";
import { expectNoAnvilLeft, startTestDevnet } from "../support/devnet.js";

afterAll(() => expectNoAnvilLeft());

const ACCOUNT = "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266";

describe("devnet slow fault", () => {
  it("delays state reads through the node's front by the seeded profile, and nothing else; heal ends it", async () => {
    const devnet = await startTestDevnet({
      networks: [{ name: "devnet", chainId: 31_337, fullNodes: 1, lightNodes: 1 }],
      latencyFronts: true,
    });
    const light = devnet.nodes("devnet").find((n) => n.role === "light")!;
    // Clients reach the node through its front; the status says the same URL.
    const direct = devnet.status().nodes.find((n) => n.name === light.name)!;
    expect(direct.httpUrl).toBe(light.httpUrl);
    const rpc = new HttpRpcClient(light.httpUrl, 30_000);
    expect(await rpc.call("eth_chainId")).toBe("0x7a69");

    await devnet.fault(light.name, { kind: "slow", profile: "severe", seed: 11 });
    expect(devnet.status().nodes.find((n) => n.name === light.name)!.fault).toEqual({
      kind: "slow",
      profile: "severe",
      seed: 11,
    });
    // The same seed draws the same delays: each read takes at least its own.
    const expected = latencySampler(SLOW_PROFILES.severe, seededRandom(11));
    const delays = [expected(), expected(), expected()];
    for (const delay of delays.slice(0, 2)) {
      const started = performance.now();
      expect(await rpc.call("eth_getBalance", [ACCOUNT, "latest"])).toMatch(/^0x/);
      expect(performance.now() - started).toBeGreaterThanOrEqual(delay - 1);
    }
    // Over WebSocket too.
    const ws = new WebSocket(light.wsUrl);
    await new Promise((resolve, reject) => ws.once("open", resolve).once("error", reject));
    const started = performance.now();
    const answer = new Promise<{ result: string }>((resolve) =>
      ws.once("message", (data) => resolve(JSON.parse(String(data)))),
    );
    ws.send(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_getCode", params: [ACCOUNT, "latest"] }));
    expect((await answer).result).toBe("0x");
    expect(performance.now() - started).toBeGreaterThanOrEqual(delays[2]! - 1);
    ws.close();

    // Blocks and other calls are not held: the driver keeps the node at the head.
    await devnet.mine();
    expect(Number(await rpc.call<string>("eth_blockNumber"))).toBe(devnet.head("devnet").number);

    await devnet.fault(light.name, { kind: "heal" });
    expect(devnet.status().nodes.find((n) => n.name === light.name)!.fault).toBeNull();
  });

  it("refuses slow for a node without a front, and a killed node's front drops the connection", async () => {
    const plain = await startTestDevnet({
      networks: [{ name: "devnet", chainId: 31_337, fullNodes: 1, lightNodes: 1 }],
    });
    await expect(plain.fault("devnet-light-0", { kind: "slow", profile: "light" })).rejects.toThrow(
      /has no latency front/,
    );

    const fronted = await startTestDevnet({
      networks: [{ name: "devnet", chainId: 31_337, fullNodes: 1, lightNodes: 1 }],
      latencyFronts: true,
    });
    const light = fronted.nodes("devnet").find((n) => n.role === "light")!;
    await fronted.fault(light.name, { kind: "kill" });
    await expect(new HttpRpcClient(light.httpUrl, 5_000).call("eth_chainId")).rejects.toThrow();
  });
});
