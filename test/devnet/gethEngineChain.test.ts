import { randomBytes } from "node:crypto";
import { describe, expect, it, onTestFinished } from "vitest";
import { HttpRpcClient } from "../../src/rpc/httpRpcClient.js";
import { gethOrSkip } from "../support/geth/gethBinary.js";
import type { EngineGeth } from "../support/geth/engineDriver.js";
import { announceHead, gethGenesis, produceBlock, startEngineGeth } from "../support/geth/engineDriver.js";
import { waitFor, waitForProgress } from "../support/waitFor.js";

const head = async (node: EngineGeth) =>
  (await new HttpRpcClient(node.httpUrl, 10_000).call("eth_getBlockByNumber", ["latest", false])) as {
    number: string;
    hash: string;
  };

describe("several geth nodes on one chain, driven through the engine API", () => {
  it("keeps the nodes on the builder's blocks, and a node that joins late catches up from its peers", async (context) => {
    const gethPath = await gethOrSkip(() => context.skip());
    const genesis = await gethGenesis(gethPath, 31_337);
    const secret = randomBytes(32);
    const start = async () => {
      const node = await startEngineGeth(gethPath!, genesis, secret);
      onTestFinished(() => node.stop());
      return node;
    };
    const [a, b] = [await start(), await start()];
    await new HttpRpcClient(b.httpUrl, 10_000).call("admin_addPeer", [a.enode]);
    let last = "";
    for (let i = 0; i < 3; i++) last = await produceBlock(a, [a, b], secret);
    expect(await head(a)).toMatchObject({ number: "0x3", hash: last });
    expect(await head(b)).toMatchObject({ number: "0x3", hash: last });

    // Joins at block 3: told of block 4 and 5 only, it fetches 1..3 from its peers over devp2p.
    const c = await start();
    const late = new HttpRpcClient(c.httpUrl, 10_000);
    for (const peer of [a, b]) await late.call("admin_addPeer", [peer.enode]);
    // Connected first: geth dials a static peer again only some 35 s after a dial that failed (a handshake that a
    // loaded machine let time out), so the bound covers one retry.
    await waitFor(async () => Number(await late.call<string>("net_peerCount", [])) > 0, {
      timeoutMs: 60_000,
      what: "the late node's peers",
    });
    for (let i = 0; i < 2; i++) last = await produceBlock(a, [a, b, c], secret);
    // Waited for while its sync moves (its head, or the block its sync reached), however slow a loaded machine is.
    // The head is named again on each poll, as a consensus client does every slot: a sync that started at block 4
    // and was told of 5 midway may stop at 4 until the next forkchoice update.
    let seen = "";
    await waitForProgress(
      async () => {
        const status = await announceHead(c, last, secret);
        const [now, syncing] = [await head(c), await late.call<unknown>("eth_syncing", [])];
        seen = `head ${Number(now.number)}, forkchoice ${status}, eth_syncing ${JSON.stringify(syncing)}`;
        return now.hash === last;
      },
      async () => {
        const syncing = await late.call<false | { currentBlock: string }>("eth_syncing", []);
        return Number((await head(c)).number) + (syncing ? Number(syncing.currentBlock) : 0);
      },
      { what: () => `the late node at block 5 (last seen: ${seen})`, intervalMs: 250 },
    );
    expect(await head(c)).toMatchObject({ number: "0x5", hash: last });
  }, 120_000);
});
