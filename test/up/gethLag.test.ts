import { PassThrough } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import { HttpRpcClient } from "../../src/rpc/httpRpcClient.js";
import { startUp, type RunningUp } from "../../src/up/runUp.js";
import { gethOrSkip } from "../support/geth/gethBinary.js";
import { writeUpConfig } from "../support/upConfig.js";
import { waitFor, waitForProgress } from "../support/waitFor.js";

const cleanup: Array<() => unknown> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

const NODE = "alpha-light-0";
const MAX_LAG = 3;
/**
 * Stalled this far behind, it syncs from its peers once healed, long enough for the lag to land mid-way; the lag is
 * more, so its target is below the node.
 */
const BEHIND = 150;
const LAG = 200;

describe("lightfleet up on a geth devnet: a lag on a light node catching up from its peers", () => {
  it("keeps the node its lag behind the chain and out of routing, and routes it again once healed", async (context) => {
    const gethPath = await gethOrSkip(() => context.skip());
    const config = writeUpConfig({
      geth: gethPath,
      blockTime: "500ms",
      replicas: 2,
      // Judged on lag alone: no restart while the test watches.
      health: {
        probeInterval: "250ms",
        maxLagBlocks: MAX_LAG,
        restartLagBlocks: 10_000,
        stallAfter: "10m",
        restartAfter: "10m",
        startupGrace: "60s",
      },
    });
    const up: RunningUp = await startUp({
      config,
      stdout: new PassThrough() as unknown as NodeJS.WriteStream,
    });
    cleanup.push(() => up.stop());
    const fleet = up.context.fleet!;
    const devnet = up.context.devnet!;
    const member = () => fleet.members("alpha").find((m) => m.name === NODE)!;
    await waitFor(() => fleet.routedMembers("alpha").length === 2, { what: "two routed", timeoutMs: 90_000 });
    const node = new HttpRpcClient(member().httpUrl, 10_000);
    const nodeHead = async () => Number(await node.call<string>("eth_blockNumber"));

    // Stalled BEHIND blocks, then healed: that far behind, it is told the head and fetches the blocks from its peers.
    // The lag lands at once, while it does. Its target (the chain less LAG) is below the node: it gets nothing more
    // until the chain is LAG past it.
    await devnet.fault(NODE, { kind: "stall" });
    const stalledAt = await nodeHead();
    // Built at once rather than waited for (geth takes timestamps ahead of the clock), each once a full node has the
    // one before: the next is built by a node at the head.
    const fullAtHead = () =>
      devnet.status().nodes.some((n) => n.role === "full" && n.head?.hash === devnet.head("alpha").hash);
    while (devnet.head("alpha").number < stalledAt + BEHIND) {
      await devnet.mine("alpha");
      await waitFor(fullAtHead, { what: "a full node at the head" });
    }
    await devnet.fault(NODE, { kind: "heal" });
    await devnet.fault(NODE, { kind: "lag", blocks: LAG });
    const held = await nodeHead();
    const laggedFrom = devnet.head("alpha").number;
    expect(held).toBeLessThan(laggedFrom - MAX_LAG);

    // For 8 blocks: the node never past where the lag found it (nor the chain less LAG, when higher), and never
    // routed: it is more than MAX_LAG behind.
    const watched: Array<{ node: number; chain: number; routed: boolean }> = [];
    await waitFor(
      async () => {
        const head = await nodeHead();
        watched.push({ node: head, chain: devnet.head("alpha").number, routed: member().routed });
        return watched.at(-1)!.chain >= laggedFrom + 8;
      },
      { intervalMs: 20, timeoutMs: 60_000, what: "8 blocks after the lag" },
    );
    const over = watched.filter((w) => w.node > Math.max(held, w.chain - LAG));
    expect(over, `heads past ${held} and the chain less ${LAG}`).toEqual([]);
    expect(watched.filter((w) => w.routed)).toEqual([]);

    // Healed, it catches up and is routed again.
    await devnet.fault(NODE, { kind: "heal" });
    await waitForProgress(() => member().routed, nodeHead, { what: `${NODE} routed again` });
  }, 240_000);
});
