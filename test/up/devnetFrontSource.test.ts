import { afterAll, describe, expect, it } from "vitest";
import { StaticUpstreamSource } from "../../src/gateway/upstreams/staticSource.js";
import { HttpRpcClient } from "../../src/rpc/httpRpcClient.js";
import { DevnetFrontSource } from "../../src/up/devnetFrontSource.js";
import { expectNoAnvilLeft, startGenesisAnvil, startTestDevnet } from "../support/devnet.js";

afterAll(() => expectNoAnvilLeft());

describe("the gateway of up behind the devnet's latency fronts", () => {
  it("reaches an attached light node through its front, where slow delays its state reads", async () => {
    const devnet = await startTestDevnet({ latencyFronts: true });
    const node = await startGenesisAnvil(devnet, "pool-0");
    await devnet.attach({ name: "pool-0", network: "devnet", httpUrl: node.httpUrl });
    const source = new DevnetFrontSource(
      new StaticUpstreamSource([
        { name: "pool-0", network: "devnet", httpUrl: node.httpUrl, wsUrl: node.wsUrl, routed: true },
        { name: "elsewhere", network: "devnet", httpUrl: "http://127.0.0.1:9", routed: true },
        { name: "other-net", network: "other", httpUrl: "http://127.0.0.1:9", routed: true },
      ]),
      devnet,
    );
    const [fronted, elsewhere] = source.upstreams("devnet");
    expect(fronted!.httpUrl).not.toBe(node.httpUrl);
    expect(fronted!.httpUrl).toBe(devnet.nodes("devnet").find((n) => n.name === "pool-0")!.httpUrl);
    expect(fronted!.wsUrl).toMatch(/^ws:\/\/127\.0\.0\.1:\d+$/);
    expect(await new HttpRpcClient(fronted!.httpUrl, 5_000).call("eth_chainId")).toBe("0x7a69");
    expect(elsewhere!.httpUrl).toBe("http://127.0.0.1:9");
    expect(source.upstreams("other")[0]!.httpUrl).toBe("http://127.0.0.1:9");
    await devnet.fault("pool-0", { kind: "slow", profile: "mild", seed: 1 });
    devnet.detach("pool-0");
    // Detached: no front any more, the node as the fleet gives it.
    expect(source.upstreams("devnet")[0]!.httpUrl).toBe(node.httpUrl);
  });
});
