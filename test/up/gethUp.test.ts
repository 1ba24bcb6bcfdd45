import { PassThrough } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import { HttpRpcClient } from "../../src/rpc/httpRpcClient.js";
import { startUp, type RunningUp } from "../../src/up/runUp.js";
import { gethOrSkip } from "../support/geth/gethBinary.js";
import { writeUpConfig } from "../support/upConfig.js";
import { waitFor } from "../support/waitFor.js";

const cleanup: Array<() => unknown> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

const LAGGED = "alpha-light-0";
const KILLED = "alpha-light-1";
const UNTOUCHED = "alpha-light-2";

describe("lightfleet up on a geth devnet", () => {
  it("serves from geth nodes, unroutes and restarts a lagged node, brings a killed one back, and restarts nothing else", async (context) => {
    const gethPath = await gethOrSkip(() => context.skip());
    const config = writeUpConfig({
      geth: gethPath,
      blockTime: "1s",
      replicas: 3,
      health: {
        probeInterval: "250ms",
        maxLagBlocks: 3,
        restartLagBlocks: 8,
        restartAfter: "2s",
        restartBackoffBase: "2s",
        stallAfter: "10s",
        startupGrace: "60s",
      },
    });
    const up: RunningUp = await startUp({
      config,
      stdout: new PassThrough() as unknown as NodeJS.WriteStream,
    });
    cleanup.push(() => up.stop());
    const { fleet, devnet } = up.context;
    const member = (name: string) => fleet!.members("alpha").find((m) => m.name === name)!;
    await waitFor(() => fleet!.routedMembers("alpha").length === 3, {
      what: "three routed",
      timeoutMs: 90_000,
    });

    // The gateway answers from geth: its client version, and the full nodes' blocks by hash.
    const gateway = new HttpRpcClient(up.endpoints.find((e) => e.label === "alpha RPC")!.url, 10_000);
    expect(await gateway.call<string>("web3_clientVersion")).toMatch(/^Geth\//);
    const served = await gateway.call<{ number: string; hash: string }>("eth_getBlockByNumber", [
      "latest",
      false,
    ]);
    const full = new HttpRpcClient(devnet!.nodes("alpha").find((n) => n.role === "full")!.httpUrl, 10_000);
    expect((await full.call<{ hash: string }>("eth_getBlockByNumber", [served.number, false])).hash).toBe(
      served.hash,
    );
    expect(devnet!.status().nodes.filter((n) => n.role === "light")).toHaveLength(3);

    // While the chain runs, no restart: eight blocks with every node routed.
    const restarts = () => fleet!.members("alpha").reduce((sum, m) => sum + m.restarts.length, 0);
    const before = restarts();
    const quietFrom = devnet!.head("alpha").number;
    await waitFor(() => devnet!.head("alpha").number >= quietFrom + 8, {
      what: "eight blocks",
      timeoutMs: 60_000,
    });
    expect(restarts()).toBe(before);
    expect(fleet!.routedMembers("alpha")).toHaveLength(3);

    // Lagged past restartLagBlocks: unrouted, then restarted (reason lag), then back on the chain and routed.
    await devnet!.fault(LAGGED, { kind: "lag", blocks: 12 });
    await waitFor(() => !member(LAGGED).routed, { what: `${LAGGED} unrouted`, timeoutMs: 30_000 });
    await waitFor(() => member(LAGGED).restarts.some((r) => r.reason === "lag"), {
      what: `${LAGGED} restarted for lag`,
      timeoutMs: 60_000,
    });
    await waitFor(() => member(LAGGED).routed, { what: `${LAGGED} routed again`, timeoutMs: 60_000 });

    // Killed: restarted as unresponsive, back on the chain and routed.
    await devnet!.fault(KILLED, { kind: "kill" });
    await waitFor(() => !member(KILLED).routed, { what: `${KILLED} unrouted`, timeoutMs: 30_000 });
    await waitFor(() => member(KILLED).restarts.length > 0 && member(KILLED).routed, {
      what: `${KILLED} restarted and routed`,
      timeoutMs: 60_000,
    });
    expect(member(KILLED).restarts.map((r) => r.reason)).toEqual(["unresponsive"]);

    // The restarted nodes are geth again, on the full nodes' chain; nothing else was restarted.
    const node = new HttpRpcClient(member(KILLED).httpUrl, 10_000);
    expect(await node.call<string>("web3_clientVersion")).toMatch(/^Geth\//);
    await waitFor(
      async () => {
        const head = await node.call<{ number: string; hash: string }>("eth_getBlockByNumber", [
          "latest",
          false,
        ]);
        const canonical = await full.call<{ hash: string } | null>("eth_getBlockByNumber", [
          head.number,
          false,
        ]);
        return Number(head.number) > Number(served.number) && canonical?.hash === head.hash;
      },
      { what: `${KILLED} on the full nodes' chain` },
    );
    expect(member(UNTOUCHED).restarts).toEqual([]);
    expect(member(LAGGED).restarts.map((r) => r.reason)).toEqual(["lag"]);
    expect(restarts()).toBe(before + 2);
  }, 300_000);
});
