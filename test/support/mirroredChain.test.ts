import { afterEach, describe, expect, it } from "vitest";
import { HttpRpcClient } from "../../src/rpc/httpRpcClient.js";
import { MirroredChain } from "./mirroredChain.js";

let chain: MirroredChain | undefined;
afterEach(async () => {
  await chain?.stopAll();
  chain = undefined;
});

describe("MirroredChain", () => {
  it("catches a lagging node up while blocks keep coming to it, on the shared blocks", async () => {
    chain = new MirroredChain();
    const [leader, lagging] = await Promise.all([chain.node("leader"), chain.node("lagging")]);
    for (let i = 0; i < 20; i++) await chain.mine([leader]);
    // A ticker that mines the next block on the lagging node while its catch-up replays the ones it missed.
    const catchUp = chain.catchUp(lagging);
    await Promise.all([chain.mine([leader, lagging]), chain.mine([leader, lagging]), catchUp]);
    const headOf = async (url: string) =>
      (await new HttpRpcClient(url, 5_000).call<{ number: string; hash: string }>("eth_getBlockByNumber", [
        "latest",
        false,
      ]))!;
    const [a, b] = await Promise.all([headOf(leader.httpUrl), headOf(lagging.httpUrl)]);
    expect(Number(b.number)).toBe(chain.head);
    expect(b).toEqual(a);
  });
});
