import { afterEach, describe, expect, it } from "vitest";
import { HttpRpcClient } from "../../src/rpc/httpRpcClient.js";
import { MirroredChain } from "./mirroredChain.js";

let chain: MirroredChain | undefined;
afterEach(async () => {
  await chain?.stopAll();
  chain = undefined;
});

const headOf = async (url: string) =>
  (await new HttpRpcClient(url, 5_000).call<{ number: string; hash: string }>("eth_getBlockByNumber", [
    "latest",
    false,
  ]))!;

describe("MirroredChain", () => {
  it("catches a lagging node up while blocks keep coming to it, on the shared blocks", async () => {
    chain = new MirroredChain();
    const [leader, lagging] = await Promise.all([chain.node("leader"), chain.node("lagging")]);
    for (let i = 0; i < 20; i++) await chain.mine([leader]);
    // A ticker that mines the next block on the lagging node while its catch-up replays the ones it missed.
    const catchUp = chain.catchUp(lagging);
    await Promise.all([chain.mine([leader, lagging]), chain.mine([leader, lagging]), catchUp]);
    const [a, b] = await Promise.all([headOf(leader.httpUrl), headOf(lagging.httpUrl)]);
    expect(Number(b.number)).toBe(chain.head);
    expect(b).toEqual(a);
  });

  it("gives a node mined again after it was left out the blocks it missed first, not the new one at a lower height", async () => {
    chain = new MirroredChain();
    const [leader, lagging] = await Promise.all([chain.node("leader"), chain.node("lagging")]);
    for (let i = 0; i < 5; i++) await chain.mine([leader]);
    await chain.mine([leader, lagging]);
    const [a, b] = await Promise.all([headOf(leader.httpUrl), headOf(lagging.httpUrl)]);
    expect(b).toEqual(a);
    expect(Number(a.number)).toBe(6);
  });
});
