import { describe, expect, it } from "vitest";
import { METHOD_TABLE, planCall } from "../../../src/gateway/pipeline/methodTable.js";
import type { PlanContext } from "../../../src/gateway/pipeline/plan.js";
import { checkMethod } from "../../../src/gateway/rpc/methodPolicy.js";

const hex = (n: number) => `0x${n.toString(16)}`;
const HASH = `0x${"ab".repeat(32)}`;
const UNKNOWN_HASH = `0x${"cd".repeat(32)}`;
/** A network at head 100, safe 90, finalized 80, that knows HASH at height 95. */
const context = (over: Partial<PlanContext> = {}): PlanContext => ({
  served: 100,
  chainId: "0x7a69",
  blockTags: (served) => ({ safe: Math.min(90, served), finalized: Math.min(80, served) }),
  heightOfHash: (hash) => (hash === HASH ? 95 : undefined),
  getLogsMaxRange: 1000,
  lowestRecentHead: (served) => served,
  filters: true,
  limitsSenders: false,
  ...over,
});
const call = (method: string, params: unknown[] = [], id: number | undefined = 1) => ({
  jsonrpc: "2.0" as const,
  ...(id === undefined ? {} : { id }),
  method,
  params,
});

describe("the method table", () => {
  it("sends only methods the policy allows to a family planner (the rest go through the policy)", () => {
    for (const method of METHOD_TABLE.keys()) expect(checkMethod(method), method).toEqual({ allowed: true });
  });
});

describe("served head", () => {
  it("answers eth_blockNumber from the served head (with shared state, the head resolved over every replica)", () => {
    expect(planCall(call("eth_blockNumber"), context())).toEqual({
      kind: "answer",
      response: { jsonrpc: "2.0", id: 1, result: "0x64" },
      outcome: "ok",
    });
  });

  it("forwards eth_blockNumber before the first agreed head, and refuses arguments as a node does", () => {
    expect(planCall(call("eth_blockNumber"), context({ served: undefined }))).toMatchObject({
      kind: "forward",
      minBlock: undefined,
    });
    for (const method of ["eth_blockNumber", "eth_chainId", "eth_accounts"])
      expect(planCall(call(method, ["x"]), context())).toMatchObject({
        kind: "answer",
        outcome: "invalid",
        response: { error: { code: -32602, message: "too many arguments, want at most 0" } },
      });
  });

  it("answers eth_chainId and eth_accounts itself", () => {
    expect(planCall(call("eth_chainId"), context())).toMatchObject({ response: { result: "0x7a69" } });
    expect(planCall(call("eth_accounts"), context())).toMatchObject({ response: { result: [] } });
  });
});

describe("block parameters", () => {
  it("pins latest and the agreed tags to numbers, and asks only a node with that block", () => {
    expect(planCall(call("eth_getBalance", ["0x01", "latest"]), context())).toEqual({
      kind: "forward",
      request: call("eth_getBalance", ["0x01", hex(100)]),
      minBlock: 100,
      requireBlock: true,
    });
    expect(planCall(call("eth_getBlockByNumber", ["finalized", false]), context())).toMatchObject({
      request: { params: [hex(80), false] },
      minBlock: 80,
      requireBlock: true,
      // A block read answers null if no node gets the block in time, as a node at that head would.
      nullIfMissing: true,
    });
    expect(planCall(call("eth_getBalance", ["0x01", "latest"]), context())).not.toHaveProperty(
      "nullIfMissing",
    );
  });

  it("answers a block above the head as a node at that head would", () => {
    expect(planCall(call("eth_getBlockByNumber", [hex(101), false]), context())).toMatchObject({
      kind: "answer",
      response: { result: null },
      outcome: "ok",
    });
    expect(planCall(call("eth_call", [{}, hex(101)]), context())).toMatchObject({
      kind: "answer",
      response: { error: { code: -32000, message: "header not found" } },
      outcome: "rpc_error",
    });
  });

  it("sends a known block hash to a node whose chain holds it; an unknown one anywhere", () => {
    expect(planCall(call("eth_getBlockByHash", [HASH, false]), context())).toMatchObject({
      kind: "forward",
      minBlock: 95,
      requireBlock: true,
      blockHash: HASH,
    });
    const unknown = planCall(call("eth_getBalance", ["0x01", { blockHash: UNKNOWN_HASH }]), context());
    expect(unknown).toMatchObject({ kind: "forward", minBlock: undefined });
    expect(unknown).not.toHaveProperty("blockHash");
    expect(unknown).not.toHaveProperty("requireBlock");
  });

  it("leaves tags to the node and the call as written before the first agreed head", () => {
    expect(planCall(call("eth_getBalance", ["0x01", "pending"]), context())).toMatchObject({
      request: { params: ["0x01", "pending"] },
      minBlock: undefined,
    });
    expect(planCall(call("eth_getBalance", ["0x01", "latest"]), context({ served: undefined }))).toEqual({
      kind: "forward",
      request: call("eth_getBalance", ["0x01", "latest"]),
      minBlock: undefined,
    });
  });
});

describe("the eth_getLogs window", () => {
  it("resolves the range to numbers within the window", () => {
    expect(
      planCall(call("eth_getLogs", [{ fromBlock: hex(50), toBlock: "latest" }]), context()),
    ).toMatchObject({
      kind: "forward",
      request: { params: [{ fromBlock: hex(50), toBlock: hex(100) }] },
      minBlock: 100,
    });
  });

  it("refuses a range reaching below the window of the head the client could have seen, naming the reason", () => {
    const plan = planCall(
      call("eth_getLogs", [{ fromBlock: hex(0), toBlock: hex(2000) }]),
      context({ served: 2000, lowestRecentHead: () => 1999 }),
    );
    expect(plan).toMatchObject({
      kind: "answer",
      outcome: "invalid",
      getLogsRefused: "range",
      response: { error: { code: -32005, data: { earliestBlock: hex(999) } } },
    });
  });

  it("sends a blockHash filter to a node whose chain holds the block", () => {
    expect(planCall(call("eth_getLogs", [{ blockHash: HASH }]), context())).toMatchObject({
      kind: "forward",
      minBlock: 95,
      blockHash: HASH,
    });
  });
});

describe("filters, transactions and forwarding", () => {
  it("gives the filter methods to the gateway's filters when it has them", () => {
    expect(planCall(call("eth_newBlockFilter"), context())).toEqual({ kind: "filters" });
    expect(planCall(call("eth_newBlockFilter"), context({ filters: false }))).toMatchObject({
      kind: "forward",
    });
  });

  it("broadcasts a signed transaction by its hash; refuses what is not one", () => {
    expect(planCall(call("eth_sendRawTransaction", ["0x01"]), context())).toMatchObject({
      kind: "broadcast",
      hash: expect.stringMatching(/^0x[0-9a-f]{64}$/),
    });
    expect(planCall(call("eth_sendRawTransaction", ["nothex"]), context())).toMatchObject({
      kind: "answer",
      outcome: "invalid",
      response: { error: { code: -32602 } },
    });
  });

  it("with the per-sender limit, refuses a transaction whose sender cannot be recovered", () => {
    expect(
      planCall(call("eth_sendRawTransaction", ["0x01"]), context({ limitsSenders: true })),
    ).toMatchObject({
      kind: "answer",
      outcome: "invalid",
      response: { error: { message: "invalid params: not a signed transaction" } },
    });
  });

  it("refuses methods outside the public namespaces and subscriptions over HTTP; forwards the rest at the head", () => {
    expect(planCall(call("admin_peers"), context())).toMatchObject({
      kind: "answer",
      outcome: "refused",
      response: { error: { code: -32601 } },
    });
    expect(planCall(call("eth_subscribe", ["newHeads"]), context())).toMatchObject({
      kind: "answer",
      outcome: "refused",
      response: { error: { message: "eth_subscribe is served over WebSocket only (/ws)" } },
    });
    expect(planCall(call("eth_gasPrice"), context())).toEqual({
      kind: "forward",
      request: call("eth_gasPrice"),
      minBlock: 100,
    });
  });
});
