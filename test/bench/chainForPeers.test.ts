import { describe, expect, it } from "vitest";
import { mineUntilFinalized } from "../../bench/peers/chainForPeers.js";
import { startTestDevnet } from "../support/devnet.js";

async function blockNumber(url: string, tag: string): Promise<number> {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_getBlockByNumber", params: [tag, false] }),
  });
  return Number(((await response.json()) as { result: { number: string } }).result.number);
}

describe("the chain the peers are benchmarked on", () => {
  it("has safe and finalized blocks above 0, which proxyd's consensus poller needs to take the node", async () => {
    const devnet = await startTestDevnet();
    const node = devnet.nodes("devnet")[0]!;
    for (let i = 0; i < 5; i++) await devnet.mine("devnet");
    expect(await blockNumber(node.httpUrl, "safe")).toBe(0);

    const mined = await mineUntilFinalized(() => devnet.mine("devnet"), node.httpUrl);

    expect(mined).toBeGreaterThan(0);
    expect(await blockNumber(node.httpUrl, "safe")).toBeGreaterThan(0);
    expect(await blockNumber(node.httpUrl, "finalized")).toBeGreaterThan(0);
  });

  it("stops mining after the bound it is given", async () => {
    const devnet = await startTestDevnet();
    const node = devnet.nodes("devnet")[0]!;
    await expect(mineUntilFinalized(() => devnet.mine("devnet"), node.httpUrl, 3)).rejects.toThrow(
      "the node's finalized block is still 0 after 3 blocks were mined",
    );
    expect(await blockNumber(node.httpUrl, "latest")).toBe(3);
  });
});
