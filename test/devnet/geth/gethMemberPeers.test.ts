import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import type { BuiltPayload, EngineClient } from "../../../src/devnet/geth/engineApi.js";
import type { GethNetwork } from "../../../src/devnet/geth/gethDevnet.js";
import type { NodeRole } from "../../../src/devnet/drivenNode.js";
import type { ActiveFault } from "../../../src/devnet/faults.js";
import { GethMember } from "../../../src/devnet/geth/gethMember.js";
import { silentLogger } from "../../../src/log/logger.js";

const CHAIN_ID = 31_337;
const HEIGHT = 20;
const hashOf = (n: number) => `0x${n.toString(16).padStart(64, "0")}`;
const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

/**
 * A geth node at `head` on the network's chain, with `peerCount` devp2p peers connected, and its engine API: blocks
 * handed to it (newPayload then setHead) move its head; a head only named to it (announce) is recorded.
 */
async function node(head: number, peerCount: number) {
  const state = {
    head,
    handed: [] as number[],
    announced: [] as number[],
    peerCountCalls: 0,
    setHeads: [] as number[],
    /** Its static peers (admin_addPeer, admin_removePeer). */
    peers: [] as string[],
    /** What eth_syncing answers (geth: an object while it downloads from its peers). */
    syncing: false as false | { highestBlock: string },
  };
  const answer = (method: string, params: unknown[]): unknown => {
    if (method === "eth_chainId") return `0x${CHAIN_ID.toString(16)}`;
    if (method === "admin_nodeInfo") return { enode: "enode://self@127.0.0.1:1" };
    if (method === "admin_addPeer") {
      state.peers.push(params[0] as string);
      return true;
    }
    if (method === "admin_removePeer") {
      state.peers = state.peers.filter((p) => p !== params[0]);
      return true;
    }
    if (method === "net_peerCount") {
      state.peerCountCalls += 1;
      return `0x${peerCount.toString(16)}`;
    }
    if (method === "eth_syncing") return state.syncing;
    if (method === "debug_setHead") {
      state.setHeads.push(Number(params[0]));
      state.head = Number(params[0]);
      return null;
    }
    if (method === "eth_getBlockByNumber") {
      const n = params[0] === "latest" ? state.head : Number(params[0]);
      return n > state.head ? null : { number: `0x${n.toString(16)}`, hash: hashOf(n), timestamp: `0x${n}` };
    }
    throw new Error(`unexpected ${method}`);
  };
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (chunk: Buffer) => (body += chunk.toString()));
    req.on("end", () => {
      const { id, method, params } = JSON.parse(body) as { id: number; method: string; params: unknown[] };
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify({ jsonrpc: "2.0", id, result: answer(method, params ?? []) }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  closers.push(() => new Promise((resolve) => server.close(() => resolve())));
  const httpUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const engine = {
    url: "",
    newPayload(payload: BuiltPayload): Promise<void> {
      state.handed.push(Number(payload.executionPayload.blockNumber));
      return Promise.resolve();
    },
    setHead(hash: string): Promise<void> {
      state.head = Number(hash);
      return Promise.resolve();
    },
    announce(payload: BuiltPayload): Promise<string> {
      state.announced.push(Number(payload.executionPayload.blockNumber));
      return Promise.resolve("SYNCING");
    },
  };
  return { state, httpUrl, engine: engine as unknown as EngineClient };
}

/** A network at HEIGHT whose other node has a devp2p identity, so the member is given it as a peer. */
function network(): GethNetwork {
  const heights = Array.from({ length: HEIGHT + 1 }, (_, n) => n);
  return {
    name: "devnet",
    chainId: CHAIN_ID,
    hashes: heights.map(hashOf),
    payloads: heights.map((n) => ({
      executionPayload: { blockHash: hashOf(n), blockNumber: `0x${n.toString(16)}`, transactions: [] },
      executionRequests: [],
    })),
    nodes: [
      { enode: "enode://other@127.0.0.1:2", detached: false, isolated: false, dropPeer: async () => {} },
    ],
    reorging: false,
  } as unknown as GethNetwork;
}

async function memberBehind(role: NodeRole, fault: ActiveFault | undefined, head: number, peerCount = 1) {
  const fake = await node(head, peerCount);
  const net = network();
  const member = new GethMember(
    { name: `devnet-${role}-0`, network: "devnet", role, httpUrl: fake.httpUrl, wsUrl: fake.httpUrl },
    false,
    net,
    fake.engine,
    undefined,
    silentLogger(),
  );
  net.nodes.push(member);
  member.fault = fault;
  return { member, state: fake.state };
}

describe("a geth node behind the devnet's chain", () => {
  it("syncs from its peers when it is a light node without a fault: told only of the head", async () => {
    const { member, state } = await memberBehind("light", undefined, 5);
    await member.sync();
    expect(state.announced).toEqual([HEIGHT]);
    expect(state.handed).toEqual([]);
  });

  it("is handed every block when it is a full node, peers or not, and does not wait for a peer to connect", async () => {
    const peered = await memberBehind("full", undefined, 5);
    await peered.member.sync();
    expect(peered.state.announced).toEqual([]);
    expect(peered.state.handed).toEqual(Array.from({ length: HEIGHT - 5 }, (_, i) => 6 + i));
    expect(peered.member.head?.number).toBe(HEIGHT);
    expect(peered.state.peerCountCalls).toBe(0);

    const alone = await memberBehind("full", undefined, 5, 0);
    await alone.member.sync();
    expect(alone.state.peerCountCalls).toBe(0);
    expect(alone.member.head?.number).toBe(HEIGHT);
  });

  it("stops its catch-up from its peers when a stall lands, cut off from them, and is taken back to where the stall found it after", async () => {
    const { member, state } = await memberBehind("light", undefined, 5);
    await member.sync();
    expect(state.announced).toEqual([HEIGHT]);
    expect(state.peers).toEqual(["enode://other@127.0.0.1:2"]);
    state.head = 9; // fetched from its peers meanwhile
    state.syncing = { highestBlock: `0x${HEIGHT.toString(16)}` };
    await member.applyFault({ kind: "stall" });
    // Its peers dropped (their static peering would redial), then debug_setHead cancels geth's download; it refuses
    // the head itself, so one block back.
    expect(state.peers).toEqual([]);
    expect(state.setHeads).toEqual([8]);
    expect(member.head?.number).toBe(8);
    // Blocks the download had under way still land: the next round takes the node back.
    state.head = 12;
    await member.sync();
    expect(state.setHeads).toEqual([8, 8]);
    expect(member.head?.number).toBe(8);
    expect(state.peers).toEqual([]);
    expect(state.announced).toEqual([HEIGHT]);
    expect(state.handed).toEqual([]);
  });

  it("has its peers back and is held no more once healed: it syncs from them again", async () => {
    const { member, state } = await memberBehind("light", undefined, 5);
    await member.sync();
    state.head = 9;
    state.syncing = { highestBlock: `0x${HEIGHT.toString(16)}` };
    await member.applyFault({ kind: "stall" });
    expect(member.isolated).toBe(true);
    await member.applyFault({ kind: "heal" });
    expect(member.isolated).toBe(false);
    state.head = 12; // blocks the cut download had under way: no longer past a hold
    await member.sync();
    expect(state.setHeads).toEqual([8]);
    expect(state.peers).toEqual(["enode://other@127.0.0.1:2"]);
    expect(state.announced).toEqual([HEIGHT, HEIGHT]);
    expect(state.handed).toEqual([]);
  });

  it("is held at the higher of where a lag found it and the lag's target", async () => {
    const { member, state } = await memberBehind("light", undefined, 5);
    await member.sync();
    state.head = 14;
    await member.applyFault({ kind: "lag", blocks: 10 });
    expect(member.head?.number).toBe(13);
    // The target (HEIGHT - 10 = 10) is below it: anything past 13 is taken back, and nothing is handed.
    state.head = 16;
    await member.sync();
    expect(state.setHeads).toEqual([13, 13]);
    expect(state.handed).toEqual([]);
  });

  it("is handed the blocks up to its lag and no further, never told of the head, when lagged", async () => {
    const { member, state } = await memberBehind("light", { kind: "lag", blocks: 4 }, 5);
    await member.sync();
    expect(state.announced).toEqual([]);
    expect(state.handed).toEqual(Array.from({ length: HEIGHT - 4 - 5 }, (_, i) => 6 + i));
    expect(member.head?.number).toBe(HEIGHT - 4);
  });
});
